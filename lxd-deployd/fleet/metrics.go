package fleet

import (
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
)

// reservation says how far a launch or delete reservation got, for its metrics: only
// existing shapes are counted (a label per name a client makes up would grow without
// bound), and a refusal at a bound is told apart from other failures by where it happened,
// never by the error's text.
type reservation struct {
	shapeFound bool
	atBound    bool
}

// launchReserved counts a launch whose reservation failed; a reserved launch is counted
// when it finishes.
func (f *Fleet) launchReserved(ref refs.InstanceRef, r reservation, err error) {
	if err == nil || !r.shapeFound {
		return
	}

	f.metrics.Launch(ref.Project, ref.Name, ref.Shape, refusedOrFailed(r), 0)
}

// launchFinished counts a launch that LXD worked on, and its duration from the reservation.
func (f *Fleet) launchFinished(p *pendingLaunch, err error) {
	f.metrics.Launch(p.ref.Project, p.ref.Name, p.ref.Shape, okOrFailed(err), time.Since(p.started))
}

// deleteReserved counts a delete whose reservation failed.
func (f *Fleet) deleteReserved(ref refs.InstanceRef, r reservation, err error) {
	if err == nil || !r.shapeFound {
		return
	}

	f.metrics.Delete(ref.Project, ref.Name, ref.Shape, refusedOrFailed(r), 0)
}

// deleteFinished counts a delete that LXD worked on.
func (f *Fleet) deleteFinished(p *pendingDelete, err error) {
	f.metrics.Delete(p.ref.Project, p.ref.Name, p.ref.Shape, okOrFailed(err), time.Since(p.started))
}

func refusedOrFailed(r reservation) string {
	if r.atBound {
		return metrics.ResultRefused
	}

	return metrics.ResultFailed
}

func okOrFailed(err error) string {
	if err != nil {
		return metrics.ResultFailed
	}

	return metrics.ResultOK
}

// countReplacement counts how a replacement autohealing started for old ended.
func (f *Fleet) countReplacement(old db.Instance, result string) {
	f.metrics.Replacement(old.Project, old.Deployment, old.Shape, result)
}

// countHookEnd counts a lifecycle hook wait that ended with action. A wait without a
// posted action ended because its deadline passed (the shape's default_action).
func (f *Fleet) countHookEnd(row db.Instance, action string) {
	f.metrics.HookWaitEnded(row.Project, row.Deployment, row.Shape, row.Hook.Hook, action, row.Hook.Action == "")
}
