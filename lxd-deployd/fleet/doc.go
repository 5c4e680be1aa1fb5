// Package fleet is the home of the instances of shapes: what the daemon observes of them,
// how it plans the background work on them, and (as the move of issue 18 goes on) the one
// place that records, launches and deletes them.
//
// Today it holds the parts every engine shares and that need nothing of package main:
//
//   - Snapshot: one listing of LXD's instances in every project that has deployments.
//   - Inflight: the instances this daemon is launching or deleting right now.
//   - The pure planners, table-tested: PlanPools (warm pools), PlanHealing (autohealing),
//     PlanReconcile and PlanRepair (reconcile), with OthersInFlux deciding which records
//     are another member's work in progress.
//   - PoolHash and Reusable: which warm pool instances a launch may take or a delete may
//     give back.
//   - Forced deletes (DeleteWithInstances), seeing the governor sockets through Sockets.
//   - The activity log entries every instance change writes in its own transaction
//     (RecordActivity, UndoLaunch, ReconcileActivity, WithKey).
//
// The acting parts (the reservation and the LXD calls in package main's fleet.go,
// warmpool.go, autoheal.go, reconcile.go, hooks.go) call these; they move here next,
// behind interfaces this package declares for the reporter and the wakers.
package fleet
