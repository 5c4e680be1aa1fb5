// Package fleet is the home of the instances of shapes: what the daemon observes of them,
// how it plans the background work on them, and the one place that records, launches and
// deletes them. Outside tests, no other code writes an instance row or creates or deletes
// an LXD instance of a shape (see doc/internals.md, "The done-check").
//
// What it holds:
//
//   - Fleet (New): launches and deletes, each a reservation (one transaction: the bound
//     check, the record, the activity entry) then the LXD work as an operation
//     (StartLaunch, StartDelete), with lifecycle hook drains (DecideWait ends a wait).
//   - The loops New builds with it, which the daemon runs on the holder of their lease:
//     WarmPool, HookKeeper, Autohealer, Reconciler.
//   - Snapshot: one listing of LXD's instances in every project that has deployments.
//   - Inflight: the instances this daemon is launching or deleting right now.
//   - The pure planners, table-tested: PlanPools (warm pools), PlanHealing (autohealing),
//     PlanReconcile and PlanRepair (reconcile), with OthersInFlux deciding which records
//     are another member's work in progress.
//   - PoolHash and Reusable: which warm pool instances a launch may take or a delete may
//     give back.
//   - Forced deletes (Fleet.DeleteWithInstances).
//   - The activity log entries every instance change writes in its own transaction
//     (ScaleActivity, RecordActivity, UndoLaunch, ReconcileActivity, WithKey).
//
// It sees the rest of the daemon only through interfaces it declares: Reporter (lifecycle
// events and governor webhooks, typed by package reporter) and Sockets (the governor
// sockets). It imports neither package main nor lxd-deployd/rollout: the rollout engine
// reaches the fleet through an interface of its own.
package fleet
