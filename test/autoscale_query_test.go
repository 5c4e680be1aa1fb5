package test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/test/promtest"
)

// TestReferenceGovernorTracksQuery runs `lxd-deploy governor run --prometheus-url` against a
// real Prometheus (Debian's package, on a loopback port, scraping every second) that scrapes
// an exporter whose value the test sets, and a daemon on the private LXD: shape web (1..3)
// follows ceil(value / 10) up, stays at its maximum above it, holds still while the query
// errors (a real execution error of Prometheus) or returns no data, and comes back down.
func TestReferenceGovernorTracksQuery(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 1, 3)
	// The governor names its instances web-<random>, outside the env's prefix: force-delete
	// the shape through the daemon so that none outlives a failed run in the shared LXD.
	t.Cleanup(func() { _ = env.admin.DeleteDeploymentShape("dep1", "web", true) })

	// test_offset joins test_load one to one on shape: a second test_offset series of the
	// shape makes the query fail in Prometheus ("many-to-many matching not allowed"), and
	// without test_load it matches nothing.
	load := func(value int) string { return fmt.Sprintf("test_load{shape=\"web\"} %d\n", value) }
	const offset = "test_offset{shape=\"web\",part=\"a\"} 0\n"
	const duplicate = "test_offset{shape=\"web\",part=\"b\"} 0\n"
	exporter := promtest.NewExporter(t, load(15)+offset)
	prom := promtest.Start(t, exporter.Target())

	log := startQueryGovernor(t, env, prom.URL, `shapes:
  web:
    query: 'sum(test_load{shape="web"} + on(shape) test_offset)'
    query_target: 10
    scale_up_cooldown: 1s
    scale_down_cooldown: 1s
    scale_down_stabilization: 3s
`)
	logText := func() string { data, _ := os.ReadFile(log); return string(data) }

	// The running instances the governor made, and the shape's size as the daemon counts it.
	running := func() ([]string, int) {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		names := []string{}
		for _, instance := range instances {
			if instance.Status == "Running" && instance.State == "created" {
				names = append(names, instance.Name)
			}
		}

		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		slices.Sort(names)
		return names, shape.ScalingCurrent
	}

	waitSize := func(t *testing.T, size int) []string {
		t.Helper()
		var names []string
		current := 0
		waitUntil(t, fmt.Sprintf("shape web at %d", size), 120*time.Second, func() bool {
			names, current = running()
			return len(names) == size && current == size
		}, showing(func() string {
			return fmt.Sprintf("shape web has %d running instances (scaling_current %d), want %d", len(names), current, size)
		}), withLog(logText))
		return names
	}

	// holds checks that the shape keeps exactly these instances for a while, and that the
	// governor logged msg meanwhile at least twice (it did ask, and said why nothing changed).
	holds := func(t *testing.T, names []string, msg string) {
		t.Helper()
		before := strings.Count(logText(), msg)
		var now []string
		var current int
		if poll(6*time.Second, func() bool {
			now, current = running()
			return !slices.Equal(now, names) || current != len(names)
		}, every(250*time.Millisecond)) {
			t.Fatalf("the shape changed while the query gave nothing to decide on: %q (scaling_current %d), was %q\n%s", now, current, names, logText())
		}

		if after := strings.Count(logText(), msg); after < before+2 {
			t.Fatalf("the governor logged %q %d times in 6s, want at least 2:\n%s", msg, after-before, logText())
		}
	}

	var full []string
	phase(t, "up from nothing to ceil(15/10)", func(t *testing.T) {
		waitSize(t, 2)
	})

	phase(t, "up to the maximum, and no further", func(t *testing.T) {
		exporter.Set(load(100) + offset)
		full = waitSize(t, 3)
		holds(t, full, "lowered to scaling_maximum 3")
	})

	phase(t, "a failing query changes nothing", func(t *testing.T) {
		exporter.Set(load(5) + offset + duplicate)
		holds(t, full, `msg="query failed: no change"`)
		if !strings.Contains(logText(), "many-to-many matching not allowed") {
			t.Fatalf("the governor's log does not say why the query failed:\n%s", logText())
		}
	})

	phase(t, "no data changes nothing", func(t *testing.T) {
		exporter.Set(offset)
		holds(t, full, `msg="query returned no data: no change"`)
	})

	phase(t, "down to ceil(5/10) once the query answers again", func(t *testing.T) {
		exporter.Set(load(5) + offset)
		waitSize(t, 1)
	})

	for _, want := range []string{"trigger=query", "query value 15 for a target of 10 per instance", "action=scale-down"} {
		if !strings.Contains(logText(), want) {
			t.Fatalf("the governor's log does not explain its decisions (%q missing):\n%s", want, logText())
		}
	}
}

// startQueryGovernor runs the reference governor for dep1 with an admin key, the policy and
// --prometheus-url, asking every second; it returns the path of its log. No webhook URL is
// set: the queries are all it decides on.
func startQueryGovernor(t *testing.T, env *governorEnv, prometheusURL string, policy string) string {
	t.Helper()
	return startPolicyGovernor(t, env, policy, "--prometheus-url", prometheusURL, "--query-interval", "1s").log
}
