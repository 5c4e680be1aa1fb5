// Package rollout holds revisions, rollouts and the image-change trigger.
//
// Every change of a shape's writable fields records an immutable revision in the
// transaction that makes it (RecordRevision, RollbackShape); a revision whose template
// changed starts a rollout when the shape's trigger asks for it (Start). The Engine moves
// the running rollouts a step at a time: each tick reads the rollout row and the shape's
// instance rows, plans one step (shapes.PlanRollout) and asks the fleet for the launches and
// deletes, which keep their bound check. Nothing lives only in memory, so a daemon killed
// mid-rollout resumes where the rows say it is, without launching twice.
//
// The engine sees the fleet and the reporter only through the interfaces of shims.go
// (Fleet: launch, delete, refill pools; Reporter), as Nomad's deployment watcher sees its
// server through nomad/deployment_watcher_shims.go. It uses package fleet's pure helpers
// (the activity log, Change), never the other way round: package fleet does not import it.
//
// Replacement instances are named <shape>-r<revision>-<6 random hex digits> (cut to LXD's
// 63 characters), so that `lxc list` shows which revision each came from and names never
// collide with the governor's.
package rollout
