package test

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The operations that break an invariant on a main with a known issue open, one list per
// issue, so that it is plain which operation triggers what. `make test` (TORTURE_OPS unset
// or "safe") leaves out the operations of every issue in openIssues; `make torture` runs
// them all (TORTURE_OPS=all); TORTURE_OPS=19.1,heal-sicken-at-max adds issues or single
// operations to the safe set.
//
// When an issue's fix lands, delete its line from openIssues: `make test` then runs its
// operations too, and keeps the fix honest.
var openIssues = map[string]string{}

// tightRoll reports whether a run tries issue 19.1: then shape roll's scaling_maximum is its
// size + 1, so that every rolling rollout surges to the maximum, and today LXD holds max+1
// while a replaced instance is still being deleted. Otherwise it is size + 2: room for the
// surge instance and one being deleted.
func tightRoll(ops []tortureOp) bool {
	for _, op := range ops {
		if op.issue == "19.1" {
			return true
		}
	}

	return false
}

// knownIssueOps are the operations that trigger each known issue.
var knownIssueOps = []tortureOp{
	// Churn at the maximum: a delete not waited on, and at once a launch retried on 409 as
	// a governor would. Today LXD holds max+1 or max+2 while the deletes stop instances.
	{name: "churn-at-max", weight: 2, issue: "19.1", run: churnAtMax},

	// Autohealing at the maximum: today the replacement launches before the unhealthy
	// instance goes, and LXD holds max+1.
	{name: "heal-sicken-at-max", weight: 2, issue: "19.1", run: func(tt *torture) string {
		return tt.sickenHeal(true)
	}},

	// A recreate rollout deletes every instance, then launches: today the launches go in
	// while LXD still stops the old ones, and LXD holds more than the maximum.
	{name: "roll-recreate", weight: 2, issue: "19.1", run: func(tt *torture) string {
		return tt.startRollout(api.RolloutRecreate)
	}},

	// A template change (PUT, with a strategy change at times) while a rollout runs. It used
	// to be followed by the running rollout, which took the new strategy's phases while its
	// recorded strategy stayed (new-1, found by this suite): a rolling rollout paused in
	// wait-promote refused promote, resume and abort. Since a534f9b a rollout keeps the
	// strategy it started with, and the change applies to the next one.
	{name: "roll-change-mid-rollout", weight: 3, issue: "new-1", run: rollChangeMidRollout},

	// PATCH of a map that already exists (instance_template.config): today it answers 200
	// and makes no revision.
	{name: "roll-patch-config", weight: 3, issue: "19.2", run: func(tt *torture) string {
		value := tt.marker()
		return tt.changeShape("roll", "PATCH", revisionMarker{field: "user.v", value: value}, func(_ api.DeploymentShape, etag string) error {
			return tt.patchShape("roll", map[string]any{"instance_template": map[string]any{"config": map[string]string{"user.v": value}}}, etag)
		})
	}},

	// A launch from an image without /sbin/init: today the record stays creating (and
	// counts), and the stopped instance stays in LXD.
	{name: "broken-launch", weight: 2, issue: "19.3", run: func(tt *torture) string {
		name := tt.nextName("broken")
		err := tt.launch("broken", name)
		if err == nil {
			tt.violate("a launch that cannot start fails", "%s launched from an image without /sbin/init", name)
		}

		return name + ": " + describe(err)
	}},
}

// churnAtMax fills shape churn to its maximum, then three times deletes one instance
// without waiting and launches another at once, retrying on 409 for up to 10 s.
func churnAtMax(tt *torture) string {
	var out []string
	for i := 0; i < tt.shapes["churn"].max; i++ {
		name := tt.nextName("churn")
		if err := tt.launch("churn", name); err != nil {
			break
		}

		out = append(out, "filled "+name)
	}

	for round := 0; round < 3; round++ {
		names, _ := tt.createdNames("churn")
		victim := tt.pick(names)
		if victim == "" {
			break
		}

		_, err := tt.gov.DeleteDeploymentShapeInstance("dep1", "churn", victim)
		tt.checkAnswer("delete "+victim, err)
		name := tt.nextName("churn")
		tries := 0
		poll(10*time.Second, func() bool {
			tries++
			var op *client.Operation
			op, err = tt.gov.CreateDeploymentShapeInstance("dep1", "churn", name)
			tt.checkAnswer("launch "+name, err)
			if err == nil {
				err = tt.wait(op, "launch "+name)
			}

			return !isStatus(err, 409)
		}, every(20*time.Millisecond))
		out = append(out, fmt.Sprintf("delete %s + launch %s after %d tries: %s", victim, name, tries, describe(err)))
	}

	return strings.Join(out, "; ")
}

// rollChangeMidRollout starts a rolling rollout when none runs, lets it work a little, and
// changes roll's template under it, its strategy too one time in three (to rolling or
// canary: a change to rolling drops canary, which only the canary strategy takes).
func rollChangeMidRollout(tt *torture) string {
	out := ""
	if running := tt.unfinishedRollout(); running == "" {
		out = tt.startRollout(api.RolloutRolling) + "; "
		time.Sleep(time.Duration(500+tt.rng.Intn(2500)) * time.Millisecond)
	}

	var settings *api.DeploymentShapeRollout
	if tt.rng.Intn(3) == 0 {
		strategies := []string{api.RolloutRolling, api.RolloutCanary}
		settings = &api.DeploymentShapeRollout{Strategy: strategies[tt.rng.Intn(2)], MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
		if settings.Strategy == api.RolloutCanary {
			settings.Canary = &api.DeploymentShapeRolloutCanary{Count: 1}
		}

		out += "strategy " + settings.Strategy + ", "
	}

	return out + tt.putTemplateValue("roll", tt.marker(), settings)
}

// selectTortureOps turns TORTURE_OPS into the operations of a run and a name for it.
func selectTortureOps(spec string) ([]tortureOp, string, error) {
	if spec == "" {
		spec = "safe"
	}

	ops := append(append([]tortureOp{}, baseOps...), platformOps...)
	if spec == "all" {
		return append(ops, knownIssueOps...), spec, nil
	}

	extra := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" || item == "safe" {
			continue
		}

		found := false
		for _, op := range knownIssueOps {
			found = found || op.issue == item || op.name == item
		}

		if !found {
			return nil, "", fmt.Errorf("TORTURE_OPS=%q: %q is neither an issue nor an operation of knownIssueOps; use all, safe, or a list such as 19.1,broken-launch", spec, item)
		}

		extra[item] = true
	}

	var left []string
	for _, op := range knownIssueOps {
		if _, open := openIssues[op.issue]; !open || extra[op.issue] || extra[op.name] {
			ops = append(ops, op)
			continue
		}

		left = append(left, op.name+" ("+op.issue+")")
	}

	sort.Strings(left)
	name := spec
	if len(left) > 0 {
		name += " (left out for open issues: " + strings.Join(left, ", ") + ")"
	}

	return ops, name, nil
}
