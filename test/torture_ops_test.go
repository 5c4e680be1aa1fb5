package test

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// tortureOp is one kind of operation a run draws at random, weighted.
type tortureOp struct {
	name   string
	weight int
	// issue is the known issue whose violation this operation triggers ("" for none): see
	// knownIssueOps and openIssues in torture_known_test.go.
	issue string
	run   func(tt *torture) string // does it; returns what happened, for the log
}

// baseOps trigger no known violation: `make test` runs them whatever is open.
var baseOps = []tortureOp{
	// Governor launches and deletes at both bounds of shape churn, each waited for.
	{name: "churn-launch", weight: 4, run: func(tt *torture) string {
		name := tt.nextName("churn")
		return name + ": " + describe(tt.launch("churn", name))
	}},
	{name: "churn-fill", weight: 2, run: func(tt *torture) string {
		var out []string
		for i := 0; i <= tt.shapes["churn"].max; i++ {
			name := tt.nextName("churn")
			err := tt.launch("churn", name)
			out = append(out, name+": "+describe(err))
			if err != nil {
				break
			}
		}

		return strings.Join(out, "; ")
	}},
	{name: "churn-delete", weight: 4, run: func(tt *torture) string {
		names, _ := tt.createdNames("churn")
		name := tt.pick(names)
		if name == "" {
			return "nothing to delete"
		}

		return name + ": " + describe(tt.remove("churn", name))
	}},
	{name: "churn-drain", weight: 2, run: func(tt *torture) string {
		var out []string
		for i := 0; i <= tt.shapes["churn"].max; i++ {
			names, _ := tt.createdNames("churn")
			name := tt.pick(names)
			if name == "" {
				break
			}

			err := tt.remove("churn", name)
			out = append(out, name+": "+describe(err))
			if err != nil {
				break
			}
		}

		return strings.Join(out, "; ")
	}},

	// Template changes of shape roll between rollouts (a change during one is
	// roll-change-mid-rollout's, torture_known_test.go); a rollout replaces them.
	{name: "roll-put-template", weight: 3, run: func(tt *torture) string {
		if running := tt.unfinishedRollout(); running != "" {
			return "skipped: " + running
		}

		return tt.putTemplateValue("roll", tt.marker(), nil)
	}},
	{name: "roll-patch-description", weight: 2, run: func(tt *torture) string {
		if running := tt.unfinishedRollout(); running != "" {
			return "skipped: " + running
		}

		value := tt.marker()
		return tt.changeShape("roll", "PATCH", revisionMarker{field: "description", value: value}, func(_ api.DeploymentShape, etag string) error {
			return tt.patchShape("roll", map[string]any{"instance_template": map[string]any{"description": value}}, etag)
		})
	}},
	{name: "roll-rollout", weight: 4, run: func(tt *torture) string {
		strategies := []string{api.RolloutRolling, api.RolloutCanary}
		return tt.startRollout(strategies[tt.rng.Intn(len(strategies))])
	}},
	{name: "roll-act", weight: 4, run: rollAct},

	// Health failures of shape heal below its maximum: the replacement may launch first.
	{name: "heal-launch", weight: 2, run: func(tt *torture) string {
		if busy := tt.healBusy(); busy != "" {
			return "skipped: " + busy
		}

		name := tt.nextName("heal")
		return name + ": " + describe(tt.launch("heal", name))
	}},
	{name: "heal-delete", weight: 1, run: func(tt *torture) string {
		if busy := tt.healBusy(); busy != "" {
			return "skipped: " + busy
		}

		names, _ := tt.createdNames("heal")
		name := tt.pick(names)
		if name == "" {
			return "nothing to delete"
		}

		tt.release(name)
		return name + ": " + describe(tt.remove("heal", name))
	}},
	{name: "heal-sicken-below-max", weight: 2, run: func(tt *torture) string {
		return tt.sickenHeal(false)
	}},

	// Terminate-hook waits of shape hooks, ended by continue or abandon.
	{name: "hooks-launch", weight: 2, run: func(tt *torture) string {
		name := tt.nextName("hooks")
		return name + ": " + describe(tt.launch("hooks", name))
	}},
	{name: "hooks-delete", weight: 2, run: func(tt *torture) string {
		names, _ := tt.createdNames("hooks")
		name := tt.pick(names)
		if name == "" {
			return "nothing to delete"
		}

		op, err := tt.gov.DeleteDeploymentShapeInstance("dep1", "hooks", name)
		tt.checkAnswer("delete "+name, err)
		if err != nil {
			return name + ": " + describe(err)
		}

		tt.pendingHook[name] = op
		return name + ": waits in terminating:wait"
	}},
	{name: "hooks-continue", weight: 2, run: func(tt *torture) string { return tt.endHookWait(api.LifecycleActionContinue) }},
	{name: "hooks-abandon", weight: 1, run: func(tt *torture) string { return tt.endHookWait(api.LifecycleActionAbandon) }},

	// Warm-pool takes of shape pool.
	{name: "pool-launch", weight: 2, run: func(tt *torture) string {
		name := tt.nextName("pool")
		return name + ": " + describe(tt.launch("pool", name))
	}},
	{name: "pool-delete", weight: 2, run: func(tt *torture) string {
		names, _ := tt.createdNames("pool")
		name := tt.pick(names)
		if name == "" {
			return "nothing to delete"
		}

		return name + ": " + describe(tt.remove("pool", name))
	}},

	// A crash of the daemon, and a start on the same data.
	{name: "kill-restart", weight: 1, run: func(tt *torture) string {
		began := time.Now()
		err := tt.restart()
		if err != nil {
			tt.violate("the daemon restarts after kill -9", "%v", err)
			return err.Error()
		}

		return fmt.Sprintf("back in %s", time.Since(began).Round(time.Millisecond))
	}},

	// Time for the engines (rollouts, autohealing, pools, reconcile) to move on their own.
	{name: "idle", weight: 3, run: func(tt *torture) string {
		d := time.Duration(200+tt.rng.Intn(1300)) * time.Millisecond
		time.Sleep(d)
		return d.String()
	}},
}

// marker returns a fresh value for a template field.
func (tt *torture) marker() string {
	tt.seq++
	return fmt.Sprintf("v%d", tt.seq)
}

// unfinishedRollout names roll's rollout that is not over, or "" when there is none.
func (tt *torture) unfinishedRollout() string {
	rollouts, err := tt.admin.GetDeploymentShapeRollouts("dep1", "roll")
	tt.checkAnswer("GET rollouts", err)
	if err != nil {
		return describe(err)
	}

	for _, r := range rollouts {
		if !r.Finished() {
			return fmt.Sprintf("rollout %d is %s", r.Number, r.Status)
		}
	}

	return ""
}

// startRollout sets roll's rollout strategy with a new template value (PUT), then starts
// a rollout; it does neither while a rollout is unfinished.
func (tt *torture) startRollout(strategy string) string {
	if running := tt.unfinishedRollout(); running != "" {
		return "skipped: " + running
	}

	resized := tt.rollToSize()
	settings := api.DeploymentShapeRollout{Strategy: strategy, MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
	if strategy == api.RolloutCanary {
		settings.Canary = &api.DeploymentShapeRolloutCanary{Count: 1}
	}

	changed := tt.putTemplateValue("roll", tt.marker(), &settings)
	op, err := tt.admin.CreateDeploymentShapeRollout("dep1", "roll", api.DeploymentRolloutsPost{Notes: "torture"})
	tt.checkAnswer("start a rollout", err)
	if err != nil {
		return fmt.Sprintf("%s%s %s; start: %s", resized, strategy, changed, describe(err))
	}

	return fmt.Sprintf("%s%s %s; started (%s)", resized, strategy, changed, op.ID)
}

// rollToSize brings roll back to rollSize instances with governor launches and deletes, as
// its governor would: a cancelled rolling rollout leaves its surge instance (one more), a
// cancelled recreate leaves fewer. Each rollout then starts from rollSize, and roll's
// scaling_maximum leaves room for exactly one surge and one delete.
func (tt *torture) rollToSize() string {
	names, err := tt.createdNames("roll")
	if err != nil {
		return ""
	}

	before := len(names)
	var out []string
	for len(names) > rollSize {
		name := tt.pick(names)
		err := tt.remove("roll", name)
		out = append(out, "trim "+name+": "+describe(err))
		if err != nil {
			break
		}

		names, _ = tt.createdNames("roll")
	}

	for i := len(names); i < rollSize; i++ {
		name := tt.nextName("roll")
		err := tt.launch("roll", name)
		out = append(out, "refill "+name+": "+describe(err))
		if err != nil {
			break
		}
	}

	if len(out) == 0 {
		return ""
	}

	return fmt.Sprintf("roll had %d instances (%s); ", before, strings.Join(out, ", "))
}

// rollAct pauses, resumes, cancels, promotes or aborts roll's latest rollout, as its state
// allows.
func rollAct(tt *torture) string {
	rollouts, err := tt.admin.GetDeploymentShapeRollouts("dep1", "roll")
	tt.checkAnswer("GET rollouts", err)
	if err != nil || len(rollouts) == 0 {
		return "no rollout: " + describe(err)
	}

	sort.Slice(rollouts, func(i, j int) bool { return rollouts[i].Number < rollouts[j].Number })
	r := rollouts[len(rollouts)-1]
	if r.Finished() {
		return fmt.Sprintf("rollout %d is %s", r.Number, r.Status)
	}

	var choices []string
	switch {
	case r.Status == api.RolloutRunning:
		choices = []string{"pause", "pause", "cancel"}
	case r.Phase == "wait-promote":
		choices = []string{"promote", "abort"}
	default:
		choices = []string{"resume", "resume", "resume", "cancel"}
	}

	action := choices[tt.rng.Intn(len(choices))]
	err = tt.admin.DeploymentShapeRolloutAction("dep1", "roll", r.Number, action)
	tt.checkAnswer(action+" a rollout", err)
	return fmt.Sprintf("%s rollout %d (%s %s, %s): %s", action, r.Number, r.Status, r.Phase, r.Strategy.Strategy, describe(err))
}

// healBusy says why shape heal is not steady (an unhealthy instance, one being replaced or
// deleted), or "" when it is. The base operations leave heal alone meanwhile: a governor
// launch while autohealing deletes is issue 19 item 1's churn, not theirs to trigger.
func (tt *torture) healBusy() string {
	instances, err := tt.records("heal")
	if err != nil {
		return describe(err)
	}

	for _, i := range instances {
		if i.State != "created" || i.Health == api.HealthUnhealthy {
			return fmt.Sprintf("%s is %s/%s", i.Name, i.State, i.Health)
		}

		// Made unhealthy but no verdict yet: a launch now would bring the shape to its
		// maximum before autohealing acts.
		if tt.sick[i.Name] {
			return fmt.Sprintf("%s was made unhealthy and is still there", i.Name)
		}
	}

	return ""
}

// sickenHeal makes a healthy instance of shape heal fail its checks: below the maximum
// (autohealing may launch first), or at it (atMax: it must delete first, issue 19 item 1).
func (tt *torture) sickenHeal(atMax bool) string {
	if busy := tt.healBusy(); busy != "" {
		return "skipped: " + busy
	}

	var filled []string
	if atMax {
		for i := 0; i < tt.shapes["heal"].max; i++ {
			name := tt.nextName("heal")
			err := tt.launch("heal", name)
			filled = append(filled, name+": "+describe(err))
			if err != nil {
				break
			}
		}
	}

	instances, err := tt.records("heal")
	if err != nil {
		return describe(err)
	}

	var healthy []string
	for _, i := range instances {
		if i.State == "created" && i.Health == api.HealthHealthy {
			healthy = append(healthy, i.Name)
		}
	}

	prefix := ""
	if len(filled) > 0 {
		prefix = "filled " + strings.Join(filled, "; ") + "; "
	}

	if atMax != (len(instances) >= tt.shapes["heal"].max) {
		return fmt.Sprintf("%sskipped: %d instances, at max wanted %v", prefix, len(instances), atMax)
	}

	name := tt.pick(healthy)
	if name == "" {
		return prefix + "skipped: no healthy instance yet"
	}

	tt.release(name)
	err = tt.sicken(name)
	if err == nil {
		tt.sick[name] = true
	}

	return fmt.Sprintf("%s%s of %d made unhealthy: %s", prefix, name, len(instances), describe(err))
}

// endHookWait ends a terminate-hook wait with continue or abandon, and waits for the delete
// to finish (continue) or give up (abandon).
func (tt *torture) endHookWait(action string) string {
	var waiting []string
	for name := range tt.pendingHook {
		waiting = append(waiting, name)
	}

	name := tt.pick(waiting)
	if name == "" {
		return "no wait to end"
	}

	op := tt.pendingHook[name]
	delete(tt.pendingHook, name)
	err := tt.gov.DeploymentShapeInstanceLifecycle("dep1", "hooks", name, action)
	tt.checkAnswer(action+" "+name, err)
	if err != nil {
		return name + ": " + describe(err)
	}

	waited := tt.wait(op, "the delete of "+name)
	if waited != nil && action == api.LifecycleActionContinue {
		// The delete's operation may have died with a killed daemon: wait for the record.
		gone := poll(opTimeout, func() bool {
			instances, _ := tt.records("hooks")
			gone := true
			for _, i := range instances {
				gone = gone && i.Name != name
			}

			return gone
		}, every(200*time.Millisecond))
		if gone {
			return fmt.Sprintf("%s: %s; delete: %s; record gone", name, action, describe(waited))
		}
	}

	return fmt.Sprintf("%s: %s; delete: %s", name, action, describe(waited))
}
