package test

import (
	"fmt"
	"sort"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// settleTimeout bounds how long a settled state may take once the operations stop: rollouts
// finish, autohealing and reconcile (every second here) catch up.
const settleTimeout = 3 * time.Minute

// run draws operations until the run's time is up.
func (tt *torture) run() {
	total := 0
	for _, op := range tt.cfg.ops {
		total += op.weight
	}

	deadline := tt.start.Add(tt.cfg.duration)
	for time.Now().Before(deadline) {
		n := tt.rng.Intn(total)
		var op tortureOp
		for _, op = range tt.cfg.ops {
			if n < op.weight {
				break
			}

			n -= op.weight
		}

		op = tt.platformDue(op)
		tt.ops++
		index := tt.ops
		tt.opCounts[op.name]++
		tt.logf("#%d %s ...", index, op.name)
		outcome := op.run(tt)
		tt.logf("#%d %s: %s", index, op.name, outcome)
	}
}

// settle ends what the run left waiting (hook waits, paused and canary rollouts), waits
// until every shape is settled, and then holds the records to LXD: they name the same
// instances and none is left creating.
func (tt *torture) settle() {
	tt.logf("settling")
	for len(tt.pendingHook) > 0 {
		tt.logf("settle: %s", tt.endHookWait(api.LifecycleActionContinue))
	}

	var unsettled string
	settled := poll(settleTimeout, func() bool {
		unsettled = tt.finishRollouts() + tt.unsettledShapes()
		return unsettled == ""
	}, every(500*time.Millisecond))
	if settled {
		tt.logf("settled")
		tt.checkSettled()
		return
	}

	tt.logf("not settled within %s: %s", settleTimeout, unsettled)
	if rollouts := tt.finishRollouts(); rollouts != "" {
		tt.violate("after settling, every rollout is over", "%s", rollouts)
	}

	tt.reportUnsettled()
	tt.checkSettled()
}

// finishRollouts moves roll's latest rollout on (promote a canary, resume a paused one) and
// says what is still running, or "" when it is over.
func (tt *torture) finishRollouts() string {
	rollouts, err := tt.admin.GetDeploymentShapeRollouts("dep1", "roll")
	tt.checkAnswer("GET rollouts", err)
	if err != nil {
		return describe(err)
	}

	unfinished := ""
	for _, r := range rollouts {
		if r.Finished() {
			continue
		}

		action := "resume"
		if r.Phase == "wait-promote" {
			action = "promote"
		}

		if r.Status == api.RolloutPaused {
			err = tt.admin.DeploymentShapeRolloutAction("dep1", "roll", r.Number, action)
			tt.checkAnswer(action+" a rollout", err)
			tt.logf("settle: %s rollout %d: %s", action, r.Number, describe(err))
			if err != nil {
				// Neither resume nor promote takes it: it is stranded; cancel ends it.
				tt.violate("a paused rollout can be resumed or promoted", "rollout %d (%s/%s, strategy %q) refused %s: %v", r.Number, r.Status, r.Phase, r.Strategy.Strategy, action, err)
				err = tt.admin.DeploymentShapeRolloutAction("dep1", "roll", r.Number, "cancel")
				tt.checkAnswer("cancel a rollout", err)
				tt.logf("settle: cancel rollout %d: %s", r.Number, describe(err))
			}
		}

		unfinished += fmt.Sprintf("rollout %d is %s/%s; ", r.Number, r.Status, r.Phase)
	}

	return unfinished
}

// shapeState compares one shape's records with what LXD holds of it.
type shapeState struct {
	records []string // name=state[/lifecycle]
	inFlux  []string // records creating, deleting, or in a hook wait
	lxd     []string
	stopped []string // instances LXD holds that do not run, name(status)
	same    bool
}

func (tt *torture) shapeStates() (map[string]shapeState, error) {
	all, err := tt.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return nil, err
	}

	live := map[string][]string{}
	stopped := map[string][]string{}
	for _, i := range all {
		if i.Config[configDeployment] == "dep1" && i.Config[configWarmPool] != "true" {
			shape := i.Config[configShape]
			live[shape] = append(live[shape], i.Name)
			if i.Status != "Running" {
				stopped[shape] = append(stopped[shape], i.Name+"("+i.Status+")")
			}
		}
	}

	states := map[string]shapeState{}
	for shape := range tt.shapes {
		instances, err := tt.records(shape)
		if err != nil {
			return nil, err
		}

		var s shapeState
		var names []string
		for _, i := range instances {
			names = append(names, i.Name)
			state := i.Name + "=" + i.State
			if i.Lifecycle != "" {
				state += "/" + i.Lifecycle
			}

			s.records = append(s.records, state)
			if i.State != "created" || i.Lifecycle != "" {
				s.inFlux = append(s.inFlux, state)
			}
		}

		s.lxd, s.stopped = live[shape], stopped[shape]
		sort.Strings(s.lxd)
		sort.Strings(names)
		s.same = strings.Join(names, ",") == strings.Join(s.lxd, ",")
		states[shape] = s
	}

	return states, nil
}

// unsettledShapes says which shapes are not settled, or "" when all are.
func (tt *torture) unsettledShapes() string {
	states, err := tt.shapeStates()
	if err != nil {
		return describe(err)
	}

	var out []string
	for shape, s := range states {
		if !s.same || len(s.inFlux) > 0 {
			out = append(out, fmt.Sprintf("%s: records %v, LXD %v", shape, s.records, s.lxd))
		}
	}

	sort.Strings(out)
	return strings.Join(out, "; ")
}

// reportUnsettled records the settle invariants a shape still breaks.
func (tt *torture) reportUnsettled() {
	states, err := tt.shapeStates()
	if err != nil {
		tt.violate("after settling, records and LXD name the same instances", "cannot compare: %v", err)
		return
	}

	for shape, s := range states {
		if !s.same {
			tt.violate("after settling, records and LXD name the same instances", "shape %s: records %v, LXD %v", shape, s.records, s.lxd)
		}

		for _, state := range s.inFlux {
			if strings.Contains(state, "=creating") {
				tt.violate("after settling, nothing is left creating", "shape %s: %s", shape, state)
			} else {
				tt.violate("after settling, nothing is left in flux", "shape %s: %s", shape, state)
			}
		}
	}
}

// checkSettled holds a settled run to what a launch promises: every instance of a shape,
// as LXD holds it, runs (a launch that failed to start leaves nothing that counts).
func (tt *torture) checkSettled() {
	states, err := tt.shapeStates()
	if err != nil {
		tt.violate("after settling, every instance of a shape runs", "cannot read: %v", err)
		return
	}

	var shapes []string
	for shape := range states {
		shapes = append(shapes, shape)
	}

	sort.Strings(shapes)
	for _, shape := range shapes {
		s := states[shape]
		tt.logf("settled %s: records %v", shape, s.records)
		if len(s.stopped) > 0 {
			tt.violate("after settling, every instance of a shape runs", "shape %s: LXD holds %v, records %v", shape, s.stopped, s.records)
		}
	}
}
