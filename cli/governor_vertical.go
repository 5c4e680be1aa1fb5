package main

import (
	"context"
	"log/slog"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
)

// resizer is a scaler that can also resize a shape's instances (the governor API's
// PUT .../resources). The vertical mode uses it when the scaler has it.
type resizer interface {
	Resize(ctx context.Context, shape string, req api.DeploymentShapeResourcesPut) (map[string]api.DeploymentResizeResult, error)
}

func (c *clientScaler) Resize(ctx context.Context, shape string, req api.DeploymentShapeResourcesPut) (map[string]api.DeploymentResizeResult, error) {
	op, err := c.server.ResizeDeploymentShape(c.deployment, shape, req)
	if err != nil {
		return nil, err
	}

	err = c.wait(ctx, op)
	if err != nil {
		return nil, err
	}

	results := map[string]api.DeploymentResizeResult{}
	instances, _ := op.Metadata["instances"].(map[string]any)
	for name, raw := range instances {
		fields, _ := raw.(map[string]any)
		result, _ := fields["result"].(string)
		reason, _ := fields["reason"].(string)
		results[name] = api.DeploymentResizeResult{Result: result, Reason: reason}
	}

	return results, nil
}

// vertical is the vertical mode for one metrics event: with a memory_target, resize the
// shape's limits.memory toward it within the shape's resource_bounds (policy.DecideMemory).
func (g *governor) vertical(ctx context.Context, log *slog.Logger, w *shapeWorker, metrics api.WebhookShapeMetrics) {
	if w.state.Policy.MemoryTarget <= 0 {
		return
	}

	r, ok := g.scaler.(resizer)
	if !ok {
		return
	}

	shape, err := g.scaler.Shape(ctx, w.name)
	if err != nil {
		log.Error("cannot read the shape, resize decision dropped", "err", err)
		return
	}

	d := policy.DecideMemory(w.state.Policy, metrics, shape.InstanceTemplate.Config[api.LimitMemory], shape.ResourceBounds[api.LimitMemory])
	attrs := []any{"mode", "vertical", "current", shape.InstanceTemplate.Config[api.LimitMemory], "desired", d.Limit, "why", d.Why}
	if g.dryRun {
		attrs = append(attrs, "dry_run", true)
	}

	log.Info("decision", attrs...)
	if d.Limit == "" || g.dryRun {
		return
	}

	results, err := r.Resize(ctx, w.name, api.DeploymentShapeResourcesPut{Memory: d.Limit, Reason: "governor: " + d.Why})
	if err != nil {
		log.Error("resize failed", "limit", d.Limit, "err", err)
		return
	}

	for name, result := range results {
		if result.Result != api.ResizeApplied {
			log.Warn("instance not resized", "instance", name, "result", result.Result, "reason", result.Reason)
		}
	}

	log.Info("resized", "limit", d.Limit, "instances", len(results))
}
