package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// usageByProject is a UsageSource answering from a map; a project it has no answer for is
// an LXD that gave none.
type usageByProject map[string]map[string]api.DeploymentInstanceUsage

func (u usageByProject) Usage(project string) (map[string]api.DeploymentInstanceUsage, error) {
	usage, ok := u[project]
	if !ok {
		return nil, errors.New("LXD gave no usage")
	}

	return usage, nil
}

// A project whose usage LXD did not give has no metrics event that round and stays due
// (its instances must not be reported stopped for an LXD that did not answer), while the
// other projects' events go out.
func TestMetricsEventsWaitForUsage(t *testing.T) {
	cluster := dbtest.Open(t)
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		for _, project := range []string{"p1", "p2"} {
			_, err := db.CreateDeployment(ctx, tx, project, api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep"}, DeploymentPut: api.DeploymentPut{
				GovernorWebhookURL: "http://192.0.2.1/hook", Config: map[string]string{KeyMetricsInterval: "10s"},
			}})
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	usage := usageByProject{"p1": {"web1": {CPUSeconds: 1}}}
	c := NewCollector(cluster, usage, NewDispatcher(DispatcherConfig{DB: cluster, Owner: "test", Logger: logger}), logger)
	sent := func() map[string]int {
		t.Helper()
		out := map[string]int{}
		err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			counts, err := db.GetDeliveryCounts(ctx, tx)
			for _, c := range counts {
				out[c.Project] += c.Count
			}

			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		return out
	}

	now := time.Now()
	err = c.Collect(context.Background(), now)
	if err == nil || !strings.Contains(err.Error(), `"p2"`) {
		t.Fatalf("a round without p2's usage says %v", err)
	}

	if got := sent(); got["p1"] != 1 || got["p2"] != 0 {
		t.Fatalf("events %v: want p1's only", got)
	}

	// LXD answers again: p2 is still due, p1 is not (its interval has not passed).
	usage["p2"] = map[string]api.DeploymentInstanceUsage{}
	err = c.Collect(context.Background(), now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}

	if got := sent(); got["p1"] != 1 || got["p2"] != 1 {
		t.Fatalf("events %v: want one each", got)
	}
}

// LXD caches each project's metrics apart: one project's readings moving says nothing of
// another's, whose unchanged readings are still its cache speaking (no false idle rate).
func TestRatesPerProject(t *testing.T) {
	c := &Collector{previous: map[string]timedSample{}}
	start := time.Now()
	c.updateProjectRates("a", map[string]Sample{"a/m1": {CPUSeconds: 10}}, start)
	c.updateProjectRates("b", map[string]Sample{"b/m1": {CPUSeconds: 10}}, start)
	c.updateProjectRates("a", map[string]Sample{"a/m1": {CPUSeconds: 12}}, start.Add(4*time.Second))
	c.updateProjectRates("b", map[string]Sample{"b/m1": {CPUSeconds: 10}}, start.Add(4*time.Second))
	if rate := c.previous["a/m1"].rate; rate == nil || *rate != 0.5 {
		t.Fatalf("a's rate %v", rate)
	}

	if rate := c.previous["b/m1"].rate; rate != nil {
		t.Fatalf("b's cached reading got a rate: %v", *rate)
	}

	// A project read with nothing running forgets its instances, and only its own.
	c.updateProjectRates("b", map[string]Sample{}, start.Add(20*time.Second))
	if _, ok := c.previous["b/m1"]; ok {
		t.Fatal("a stopped instance is remembered")
	}

	if _, ok := c.previous["a/m1"]; !ok {
		t.Fatal("another project's instance is forgotten")
	}
}
