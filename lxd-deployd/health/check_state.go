package health

import (
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A check that cannot start on any instance (a command the image lacks, a port nothing
// listens on) is the shape's fault, not the instances': replacing them would only replace
// every instance in turn with another that fails the same way. The checker follows, per
// shape, whether the check has started anywhere since the health object last changed:
//   - ok: some instance's check started (it passed, or its command ran and failed);
//     autohealing may then replace an instance whose check cannot start (its own image
//     lacks the command, its service is down).
//   - broken: every instance's latest check since the change could not start; the shape
//     says so, and autohealing replaces none for it.
//   - unknown (""): not every instance has been checked since the change; autohealing
//     holds the instances whose check cannot start until it is known.
// ok is kept until the health object changes (db.UpdateShape forgets it then).

// shapeCheck is what a shape's targets share: its health object and the check's state.
type shapeCheck struct {
	id     int64
	name   string
	health *api.DeploymentShapeHealth

	// fingerprint is the health object's JSON: another fingerprint is another check.
	fingerprint string

	// state is db.Shape.HealthCheck as last listed or written.
	state string
}

// newShapeCheck describes a listed shape's check.
func newShapeCheck(id int64, name string, h *api.DeploymentShapeHealth, state string) *shapeCheck {
	b, _ := json.Marshal(h)
	return &shapeCheck{id: id, name: name, health: h, fingerprint: string(b), state: state}
}

// checkStates follows every checked shape's state; only the checker's Run goroutine uses it.
type checkStates map[int64]*shapeFollow

// shapeFollow is one shape's check as the checker follows it.
type shapeFollow struct {
	check *shapeCheck

	// instances are the shape's checked instances as last listed.
	instances map[int64]bool

	// started holds, per instance, whether its latest verdict since the check changed could
	// start (outside the grace period: a service still starting refuses connections).
	started map[int64]bool

	// last is the latest result that could not start, for the broken reason.
	last Result
}

// listed takes a new listing of the targets: a shape whose health object changed starts
// over, and the instances no longer listed are forgotten.
func (cs checkStates) listed(targets []target) {
	seen := map[int64]map[int64]bool{}
	for _, t := range targets {
		sc := t.shape
		if sc == nil {
			continue
		}

		f := cs[sc.id]
		if f == nil || f.check.fingerprint != sc.fingerprint {
			f = &shapeFollow{started: map[int64]bool{}}
			cs[sc.id] = f
		}

		f.check = sc
		if seen[sc.id] == nil {
			seen[sc.id] = map[int64]bool{}
		}

		seen[sc.id][t.row.ID] = true
	}

	for id, f := range cs {
		instances, ok := seen[id]
		if !ok {
			delete(cs, id)
			continue
		}

		f.instances = instances
		for instance := range f.started {
			if !instances[instance] {
				delete(f.started, instance)
			}
		}
	}
}

// checkWrite is a shape's check state to record.
type checkWrite struct {
	check  *shapeCheck
	state  string
	reason string
}

// observe takes a batch of results and returns the shapes whose check state changed.
func (cs checkStates) observe(results []pendingResult) []checkWrite {
	touched := map[int64]bool{}
	for _, p := range results {
		r, t := p.result, p.target
		f := cs[shapeID(t)]
		if f == nil || t.shape.fingerprint != f.check.fingerprint || r.NoVerdict || r.Expiry {
			continue
		}

		// A failure in the grace period may be a service still starting.
		if !r.Passed && r.At.Before(t.row.StateChangedAt.Add(t.settings.Grace)) {
			continue
		}

		f.started[t.row.ID] = r.Passed || !r.CannotStart
		if !f.started[t.row.ID] {
			f.last = r
		}

		touched[f.check.id] = true
	}

	var writes []checkWrite
	for id := range touched {
		f := cs[id]
		state, reason := f.decide()
		if state != f.check.state {
			writes = append(writes, checkWrite{check: f.check, state: state, reason: reason})
		}
	}

	return writes
}

// decide is a shape's check state from what its instances' checks did.
func (f *shapeFollow) decide() (string, string) {
	if f.check.state == api.HealthCheckOK {
		return api.HealthCheckOK, ""
	}

	for _, started := range f.started {
		if started {
			return api.HealthCheckOK, ""
		}
	}

	if len(f.instances) == 0 || len(f.started) < len(f.instances) {
		return "", ""
	}

	return api.HealthCheckBroken, brokenReason(f.check.health, len(f.instances), f.last)
}

// brokenReason says what is wrong with a check that starts on no instance, and what to
// fix. It goes to every reader of the shape: the exit code, never the output.
func brokenReason(h *api.DeploymentShapeHealth, instances int, last Result) string {
	switch {
	case h != nil && h.HTTP != nil:
		return fmt.Sprintf("nothing accepts connections on port %d of any of the %d instances: fix health.http.port, or the service the image runs; autohealing replaces nothing for this check", h.HTTP.Port, instances)
	case h != nil && h.TCP != nil:
		return fmt.Sprintf("nothing accepts connections on port %d of any of the %d instances: fix health.tcp.port, or the service the image runs; autohealing replaces nothing for this check", h.TCP.Port, instances)
	case last.ExitCode == exitNotFound:
		return fmt.Sprintf("the check's command cannot start on any of the %d instances (exit code 127: not found in the image): fix health.command; autohealing replaces nothing for this check", instances)
	case last.ExitCode == exitCannotExecute:
		return fmt.Sprintf("the check's command cannot start on any of the %d instances (exit code 126: not executable): fix health.command; autohealing replaces nothing for this check", instances)
	default:
		return fmt.Sprintf("LXD could not start the check's command on any of the %d instances: fix health.command; autohealing replaces nothing for this check", instances)
	}
}

func shapeID(t target) int64 {
	if t.shape == nil {
		return 0
	}

	return t.shape.id
}
