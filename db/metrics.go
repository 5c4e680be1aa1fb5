package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ShapeCount is a shape's size against its bounds, and the state of its instances, warm
// pool and rollouts, for the metrics gauges. Every instance count but WarmPoolReady is over
// the instances the shape counts (Current), so the health counts add up to Current.
type ShapeCount struct {
	Project    string
	Deployment string
	Shape      string
	Current    int
	Minimum    int
	Maximum    int

	// Revision is the shape's latest revision; Outdated counts instances made from an
	// older one (what a rollout replaces).
	Revision int
	Outdated int

	// Healthy, Unhealthy, Starting and Unknown count instances by their last health verdict.
	Healthy   int
	Unhealthy int
	Starting  int
	Unknown   int

	// Settled counts created instances out of their launching:wait, and SettledHealthy
	// those of them that are healthy: ready is the one or the other, whether the shape has
	// health checks or not (shapes.Ready), which the caller decides from Health.
	Settled        int
	SettledHealthy int

	// LaunchingWait and TerminatingWait count instances waiting in a lifecycle hook.
	LaunchingWait   int
	TerminatingWait int

	// WarmPoolReady counts the warm pool's instances ready to be taken.
	WarmPoolReady int

	// Degraded: autohealing gave up on the shape.
	Degraded bool

	// HealHeld: autohealing holds for the shape (correlated failures, a broken check).
	HealHeld bool

	// CheckBroken: the shape's check could not start on any instance.
	CheckBroken bool

	// RolloutsRunning and RolloutsPaused count the shape's active rollouts (one at most).
	RolloutsRunning int
	RolloutsPaused  int

	// HasHooks: the shape sets lifecycle hooks.
	HasHooks bool

	// Health and WarmPool are the shape's settings (nil when not set).
	Health   *api.DeploymentShapeHealth
	WarmPool *api.DeploymentShapeWarmPool

	// LimitCPU and LimitMemory are the template's limits.cpu and limits.memory of a shape
	// with resource_bounds ("" otherwise): the sizes resizes move.
	LimitCPU    string
	LimitMemory string
}

// DeliveryCount is how many of a deployment's webhook deliveries are in one status.
type DeliveryCount struct {
	Project    string
	Deployment string
	Status     string
	Count      int
}

// GetShapeCounts returns every shape's size, bounds and instance, warm pool and rollout
// state in one query: a scrape of many shapes costs one round trip, not one per shape. The
// instance counts come from one pass over the instance rows (the join), the warm pool and
// rollout counts from one grouped pass each (not a lookup per shape).
func GetShapeCounts(ctx context.Context, tx *sql.Tx) ([]ShapeCount, error) {
	// The instance counts are grouped on their own, then joined: every shape row is then
	// read once, not once per instance.
	rows, err := tx.QueryContext(ctx, `
SELECT d.project, d.name, s.name, s.scaling_minimum, s.scaling_maximum, s.revision, s.degraded, s.heal_hold != '', s.health_check = 'broken', s.health, s.warm_pool,
       COALESCE(c.current, 0), COALESCE(c.outdated, 0),
       COALESCE(c.healthy, 0), COALESCE(c.unhealthy, 0), COALESCE(c.starting, 0), COALESCE(c.unknown, 0),
       COALESCE(c.settled, 0), COALESCE(c.settled_healthy, 0), COALESCE(c.launching, 0), COALESCE(c.terminating, 0),
       COALESCE(p.ready, 0), COALESCE(r.running, 0), COALESCE(r.paused, 0), s.hooks != '',
       CASE WHEN s.resource_bounds != '' THEN s.instance_template ELSE '' END
  FROM deployments_shapes s
  JOIN deployments d ON d.id = s.deployment_id
  LEFT JOIN (
    SELECT i.deployment_shape_id AS shape_id, COUNT(*) AS current, SUM(`+outdatedInstance+`) AS outdated,
           SUM(i.health = 'healthy') AS healthy, SUM(i.health = 'unhealthy') AS unhealthy, SUM(i.health = 'starting') AS starting,
           SUM(i.health NOT IN ('healthy', 'unhealthy', 'starting')) AS unknown,
           SUM(`+settledInstance+`) AS settled,
           SUM(`+readyCheckedInstance+`) AS settled_healthy,
           SUM(i.hook = 'launching:wait') AS launching, SUM(i.hook = 'terminating:wait') AS terminating
      FROM deployments_shapes_instances i
      JOIN deployments_shapes si ON si.id = i.deployment_shape_id
     WHERE `+countedInstance+`
     GROUP BY i.deployment_shape_id) c ON c.shape_id = s.id
  LEFT JOIN (SELECT deployment_shape_id, COUNT(*) AS ready FROM deployments_shapes_pool WHERE state = 'ready' GROUP BY deployment_shape_id) p
         ON p.deployment_shape_id = s.id
  LEFT JOIN (SELECT deployment_shape_id, SUM(status = 'running') AS running, SUM(status = 'paused') AS paused
               FROM deployments_shapes_rollouts WHERE status IN ('running', 'paused') GROUP BY deployment_shape_id) r
         ON r.deployment_shape_id = s.id
 ORDER BY d.project, d.name, s.name`)
	if err != nil {
		return nil, fmt.Errorf("count shape instances: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := []ShapeCount{}
	for rows.Next() {
		var c ShapeCount
		var degraded, health, warmPool, template string
		err = rows.Scan(&c.Project, &c.Deployment, &c.Shape, &c.Minimum, &c.Maximum, &c.Revision, &degraded, &c.HealHeld, &c.CheckBroken, &health, &warmPool,
			&c.Current, &c.Outdated, &c.Healthy, &c.Unhealthy, &c.Starting, &c.Unknown, &c.Settled, &c.SettledHealthy,
			&c.LaunchingWait, &c.TerminatingWait, &c.WarmPoolReady, &c.RolloutsRunning, &c.RolloutsPaused, &c.HasHooks, &template)
		if err != nil {
			return nil, fmt.Errorf("count shape instances: %w", err)
		}

		var put api.DeploymentShapePut
		err = unmarshalLifecycle(health, "", warmPool, &put)
		if err != nil {
			return nil, fmt.Errorf("shape %q: %w", c.Shape, err)
		}

		if template != "" {
			var t struct {
				Config map[string]string `json:"config"`
			}

			_ = json.Unmarshal([]byte(template), &t) // GetShapes reports a corrupt template
			c.LimitCPU, c.LimitMemory = t.Config[api.LimitCPU], t.Config[api.LimitMemory]
		}

		c.Degraded = degraded != ""
		c.Health = put.Health
		c.WarmPool = put.WarmPool
		counts = append(counts, c)
	}

	return counts, rows.Err()
}

// GetDeliveryCounts returns how many webhook deliveries each deployment has in each status.
func GetDeliveryCounts(ctx context.Context, tx *sql.Tx) ([]DeliveryCount, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT d.project, d.name, w.status, COUNT(*)
  FROM webhook_deliveries w
  JOIN deployments d ON d.id = w.deployment_id
 GROUP BY w.deployment_id, w.status`)
	if err != nil {
		return nil, fmt.Errorf("count webhook deliveries: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := []DeliveryCount{}
	for rows.Next() {
		var c DeliveryCount
		err = rows.Scan(&c.Project, &c.Deployment, &c.Status, &c.Count)
		if err != nil {
			return nil, fmt.Errorf("count webhook deliveries: %w", err)
		}

		counts = append(counts, c)
	}

	return counts, rows.Err()
}
