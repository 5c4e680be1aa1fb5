package test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// lxdSampler reads LXD's own instance list (GET /1.0/instances on LXD's socket) every 50 ms
// and keeps the most instances of this test's shape web it ever saw at once: the bounds as
// LXD itself sees them, not as our records say.
type lxdSampler struct {
	stop func()

	most    int
	mostAt  string // the names LXD held when it held the most
	samples int
}

// sampleLXD starts a sampler; stop it with (*lxdSampler).finish.
func (env *governorEnv) sampleLXD(t testing.TB) *lxdSampler {
	s := &lxdSampler{}
	s.stop = sampleLXD(t, env.lxdConn, 50*time.Millisecond, func(instances []lxdapi.Instance) {
		var names []string
		for _, i := range instances {
			// Warm pool instances are not the shape's (they never count).
			ours := strings.HasPrefix(i.Name, env.prefix+"-") && i.Config["user.lxd-deployd.deployment"] == "dep1" && i.Config["user.lxd-deployd.shape"] == "web"
			if ours && i.Config["user.lxd-deployd.warm-pool"] == "" {
				names = append(names, i.Name)
			}
		}

		s.samples++
		if len(names) > s.most {
			s.most, s.mostAt = len(names), strings.Join(names, " ")
		}
	}, nil)

	return s
}

// finish stops the sampler and returns the most instances LXD held at once, which ones,
// and how many samples it took.
func (s *lxdSampler) finish() (int, string, int) {
	s.stop()
	return s.most, s.mostAt, s.samples
}

// launchRetried launches an instance as a governor would: a 409 at the bound is tried
// again until it is accepted (a delete in flight ends). It returns the refusals it met.
func launchRetried(t *testing.T, c *client.Server, name string) (*client.Operation, []string) {
	t.Helper()
	var refusals []string
	var op *client.Operation
	var err error
	waitUntil(t, "launch "+name+" accepted", 60*time.Second, func() bool {
		op, err = c.CreateDeploymentShapeInstance("dep1", "web", name)
		if err == nil {
			return true
		}

		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
			t.Fatalf("launch %s: %v (after %d refusals)", name, err, len(refusals))
		}

		refusals = append(refusals, err.Error())
		return false
	}, every(50*time.Millisecond), showing(func() string { return fmt.Sprintf("%v (after %d refusals)", err, len(refusals)) }))

	return op, refusals
}

// TestBoundsHoldInLXDUnderChurn: a shape at its maximum of 3; eight times an instance is
// deleted (not waited on) and a launch follows at once, retried on 409 as a governor does.
// An instance counts until LXD has deleted it, so LXD never holds more than 3 instances of
// the shape, and the refusals say why and what to do.
func TestBoundsHoldInLXDUnderChurn(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	var current []string
	for i := range 3 {
		name := env.name(fmt.Sprintf("c%d", i))
		env.launch(t, env.gov, name)
		current = append(current, name)
	}

	sampler := env.sampleLXD(t)
	var deletes []*client.Operation
	var refusals []string
	launches := map[string]*client.Operation{}
	for round := range 8 {
		// A governor deletes a running instance: one launched a few rounds ago may still be
		// starting.
		old := current[0]
		if launch := launches[old]; launch != nil {
			must(t, launch.Wait(context.Background()))
			delete(launches, old)
		}

		op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", old)
		must(t, err)
		deletes = append(deletes, op)

		name := env.name(fmt.Sprintf("n%d", round))
		launch, refused := launchRetried(t, env.gov, name)
		launches[name] = launch
		refusals = append(refusals, refused...)
		current = append(current[1:], name)
	}

	for _, op := range deletes {
		must(t, op.Wait(context.Background()))
	}

	for _, op := range launches {
		must(t, op.Wait(context.Background()))
	}

	most, mostAt, samples := sampler.finish()
	t.Logf("%d samples of LXD's list, at most %d instances; %d launches refused while a delete was in flight", samples, most, len(refusals))
	if most > 3 {
		t.Fatalf("LXD held %d instances of a shape with scaling_maximum 3: %s\n%s", most, mostAt, env.d.Log())
	}

	if samples < 10 {
		t.Fatalf("only %d samples of LXD's list: the test proves nothing", samples)
	}

	// A launch right after a delete meets the delete in flight at least once, and the 409
	// says so.
	named := false
	for _, r := range refusals {
		named = named || strings.Contains(r, "still being deleted: retry when it is gone")
	}

	if !named {
		t.Fatalf("no refusal named the delete in flight: %q", refusals)
	}

	// Records and LXD name the same three instances.
	inLXD := env.lxdInstances(t)
	records := env.instancesByName(t)
	for _, name := range current {
		if _, ok := inLXD[name]; !ok || records[name].State != "created" {
			t.Fatalf("instance %s: in LXD %v, record %+v", name, ok, records[name])
		}
	}

	if len(inLXD) != 3 || len(records) != 3 {
		t.Fatalf("LXD holds %d instances and the records %d, want 3", len(inLXD), len(records))
	}
}

// TestAutohealingAtMaximumDeletesFirst: a shape at its maximum of 2 with health.replace;
// one instance turns unhealthy and is replaced. At the maximum the unhealthy instance goes
// before its replacement is made, so LXD never holds 3.
func TestAutohealingAtMaximumDeletesFirst(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = sickFileHealth()
	})

	a, b := env.name("a"), env.name("b")
	env.launch(t, env.gov, a)
	env.launch(t, env.gov, b)
	env.waitUntil(t, "both instances healthy", 30*time.Second, func() bool {
		byName := env.instancesByName(t)
		return byName[a].Health == api.HealthHealthy && byName[b].Health == api.HealthHealthy
	})

	sampler := env.sampleLXD(t)
	env.exec(t, a, "touch", "/tmp/sick")
	var replacement string
	env.waitUntil(t, "the unhealthy instance replaced by a healthy one", 60*time.Second, func() bool {
		byName := env.instancesByName(t)
		_, old := byName[a]
		replacement = healthyReplacement(byName, a)

		return !old && replacement != "" && len(byName) == 2
	})

	most, mostAt, samples := sampler.finish()
	t.Logf("%d samples of LXD's list, at most %d instances", samples, most)
	if most > 2 {
		t.Fatalf("LXD held %d instances of a shape with scaling_maximum 2 during autohealing: %s\n%s", most, mostAt, env.d.Log())
	}

	inLXD := env.lxdInstances(t)
	if _, ok := inLXD[a]; ok || len(inLXD) != 2 {
		t.Fatalf("after the replacement LXD holds %d instances (the replaced one: %v)", len(inLXD), ok)
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingCurrent != 2 {
		t.Fatalf("autohealing changed the size: %d", shape.ScalingCurrent)
	}
}
