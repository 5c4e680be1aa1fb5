package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
)

// resizingScaler is a fakeScaler that records resizes.
type resizingScaler struct {
	*fakeScaler
	resizes []api.DeploymentShapeResourcesPut
}

func (r *resizingScaler) Resize(ctx context.Context, shape string, req api.DeploymentShapeResourcesPut) (map[string]api.DeploymentResizeResult, error) {
	r.resizes = append(r.resizes, req)
	return map[string]api.DeploymentResizeResult{"web1": {Result: api.ResizeApplied}}, nil
}

func TestGovernorVertical(t *testing.T) {
	s := &resizingScaler{fakeScaler: newFakeScaler()}
	s.addShape("web", 1, 0, 5)
	s.shapes["web"].InstanceTemplate.Config = map[string]string{api.LimitMemory: "128MiB"}
	s.shapes["web"].ResourceBounds = api.DeploymentShapeResourceBounds{api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"}}
	p := policy.Shape{MemoryTarget: 0.5, Tolerance: 0.1}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	metrics := api.WebhookShapeMetrics{Instances: map[string]api.WebhookInstanceMetrics{"web1": {Status: "Running", MemoryUsageBytes: 120 << 20}}}

	for _, dryRun := range []bool{true, false} {
		g := newGovernor(context.Background(), s, &policy.Policy{}, dryRun, log)
		g.vertical(context.Background(), log, &shapeWorker{name: "web", state: policy.NewState(p)}, metrics)
	}

	if len(s.resizes) != 1 || s.resizes[0].Memory != "240MiB" || s.resizes[0].Reason == "" {
		t.Fatalf("want one resize to 240MiB (not in dry run), got %+v", s.resizes)
	}

	// Without a memory target, or a scaler that cannot resize, nothing is asked.
	g := newGovernor(context.Background(), s, &policy.Policy{}, false, log)
	g.vertical(context.Background(), log, &shapeWorker{name: "web", state: policy.NewState(policy.Shape{Tolerance: 0.1})}, metrics)
	g = newGovernor(context.Background(), s.fakeScaler, &policy.Policy{}, false, log)
	g.vertical(context.Background(), log, &shapeWorker{name: "web", state: policy.NewState(p)}, metrics)
	if len(s.resizes) != 1 {
		t.Fatalf("resized without a target or a resizer: %+v", s.resizes)
	}
}
