package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlock returns the fenced block that follows "<!-- name -->" in doc/monitoring.md, so
// the tests check the very text operators copy.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile("../../doc/monitoring.md")
	if err != nil {
		t.Fatal(err)
	}

	_, rest, found := strings.Cut(string(doc), "<!-- "+name+" -->\n")
	if !found {
		t.Fatalf("doc/monitoring.md has no <!-- %s --> block", name)
	}

	_, rest, _ = strings.Cut(rest, "\n") // the opening fence
	block, _, found := strings.Cut(rest, "\n```")
	if !found {
		t.Fatalf("the %s block of doc/monitoring.md is not closed", name)
	}

	return block + "\n"
}

// promtool finds promtool (Debian package prometheus, which make deps-test installs). With
// LXDTEST_REQUIRE=1, as in make test and CI, its absence fails the test.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LXDTEST_REQUIRE") == "1" {
			t.Fatal("promtool is missing: install the Debian package prometheus (make deps-test)")
		}

		t.Skip("promtool is missing (Debian package prometheus, make deps-test): the rules are not checked")
	}

	return path
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The alert rules of doc/monitoring.md are valid and fire when they should.
func TestDocAlertRules(t *testing.T) {
	dir := t.TempDir()
	err := os.WriteFile(filepath.Join(dir, "alerts.yml"), []byte(docBlock(t, "alerts.yml")), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	unitTests, err := os.ReadFile("testdata/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}

	err = os.WriteFile(filepath.Join(dir, "alerts_test.yml"), unitTests, 0o600)
	if err != nil {
		t.Fatal(err)
	}

	runPromtool(t, dir, "check", "rules", "alerts.yml")
	runPromtool(t, dir, "test", "rules", "alerts_test.yml")
}

// The scrape configuration of doc/monitoring.md is valid, its files moved to a temporary
// directory (promtool checks that they exist).
func TestDocScrapeConfig(t *testing.T) {
	dir := t.TempDir()
	config := strings.ReplaceAll(docBlock(t, "prometheus.yml"), "/etc/prometheus/lxd-deployd/", dir+"/")
	files := map[string]string{"prometheus.yml": config, "alerts.yml": docBlock(t, "alerts.yml"), "server.crt": "", "metrics.crt": "", "metrics.key": ""}
	for name, content := range files {
		err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)
		if err != nil {
			t.Fatal(err)
		}
	}

	runPromtool(t, dir, "check", "config", "--syntax-only", "prometheus.yml")
}

// Every family the dashboard and the rules use exists in the daemon's exposition.
func TestDocNamesExist(t *testing.T) {
	m := New(Sources{
		Snapshot: func(ctx context.Context) (Snapshot, error) {
			return Snapshot{
				Shapes:     []ShapeStat{{Project: "p", Deployment: "d", Shape: "s", HasHealthChecks: true, HasHooks: true, HasWarmPool: true, RolloutsRunning: 1}},
				Deliveries: []DeliveryStat{{Project: "p", Deployment: "d", Status: "pending"}},
			}, nil
		},
		LXDReachable:       func() bool { return true },
		OperationsRunning:  func() int { return 0 },
		Leader:             func(context.Context) (bool, error) { return true, nil },
		Members:            func(context.Context) (int, error) { return 1, nil },
		TransactionRetries: func() uint64 { return 0 },
	})

	// Vector families appear once they have a child.
	m.Launch("p", "d", "s", ResultOK, time.Second)
	m.Delete("p", "d", "s", ResultOK, time.Second)
	m.ScaleRequest("p", "d", "s")
	m.APIRequest("/1.0", "GET", 200, time.Millisecond)
	m.LXDCall("list", time.Millisecond, errors.New("x"))
	m.WebhookAttempt("p", "d", time.Millisecond, nil)
	m.Replacement("p", "d", "s", ReplacementOK)
	m.RolloutFinished("p", "d", "s", "failed")
	m.HookWaitEnded("p", "d", "s", "launching:wait", "continue", false)

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}

	known := map[string]bool{"up": true}
	for _, f := range families {
		known[f.GetName()] = true
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			known[f.GetName()+suffix] = true
		}
	}

	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}

	err = json.Unmarshal([]byte(docBlock(t, "dashboard.json")), &dashboard)
	if err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}

	exprs := []string{docBlock(t, "alerts.yml")}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}

	name := regexp.MustCompile(`\blxd_deployd_[a-z_]+`)
	for _, expr := range exprs {
		for _, used := range name.FindAllString(expr, -1) {
			if !known[used] {
				t.Errorf("doc/monitoring.md uses %s, which the daemon does not export", used)
			}
		}
	}
}

// Every query of the dashboard of doc/monitoring.md is valid PromQL: promtool checks them
// as recording rules ($deployment, Grafana's variable, matches everything).
func TestDocDashboardQueries(t *testing.T) {
	var dashboard struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}

	err := json.Unmarshal([]byte(docBlock(t, "dashboard.json")), &dashboard)
	if err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}

	rules := "groups:\n  - name: dashboard\n    rules:\n"
	for i, p := range dashboard.Panels {
		for j, target := range p.Targets {
			expr, err := json.Marshal(strings.ReplaceAll(target.Expr, "$deployment", ".*"))
			if err != nil {
				t.Fatal(err)
			}

			rules += fmt.Sprintf("      - record: dashboard:panel%d:%d\n        expr: %s\n", i, j, expr)
		}
	}

	dir := t.TempDir()
	err = os.WriteFile(filepath.Join(dir, "dashboard.yml"), []byte(rules), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	runPromtool(t, dir, "check", "rules", "dashboard.yml")
}
