package api

import (
	lxdapi "github.com/canonical/lxd/shared/api"
)

// DeploymentShapesPost represents the fields required to create a shape.
type DeploymentShapesPost struct {
	DeploymentShapePost `yaml:",inline"`
	DeploymentShapePut  `yaml:",inline"`
}

// DeploymentShapePost represents the fields required to rename a shape.
type DeploymentShapePost struct {
	// The name of the shape
	// Example: web
	Name string `json:"name" yaml:"name"`
}

// DeploymentShapePut represents the modifiable fields of a shape.
type DeploymentShapePut struct {
	// Description of the shape
	// Example: Web servers
	Description string `json:"description" yaml:"description"`

	// Shape configuration map
	// Example: {"user.mykey": "foo"}
	Config map[string]string `json:"config" yaml:"config"`

	// Template of the instances of this shape (LXD's own InstancesPost, without a name).
	// Changing it affects only instances created afterwards.
	InstanceTemplate lxdapi.InstancesPost `json:"instance_template" yaml:"instance_template"`

	// Maximum number of instances of the shape
	// Example: 3
	ScalingMaximum int `json:"scaling_maximum" yaml:"scaling_maximum"`

	// Minimum number of instances of the shape
	// Example: 1
	ScalingMinimum int `json:"scaling_minimum" yaml:"scaling_minimum"`

	// How new revisions reach running instances (strategy, surge, trigger, ...)
	Rollout DeploymentShapeRollout `json:"rollout" yaml:"rollout"`

	// Health checks of the instances and autohealing (none when absent)
	Health *DeploymentShapeHealth `json:"health,omitempty" yaml:"health,omitempty"`

	// Lifecycle hooks: launching:wait and terminating:wait (none when absent)
	Hooks *DeploymentShapeHooks `json:"hooks,omitempty" yaml:"hooks,omitempty"`

	// Instances kept made but stopped, for fast launches (none when absent)
	WarmPool *DeploymentShapeWarmPool `json:"warm_pool,omitempty" yaml:"warm_pool,omitempty"`

	// Bounds of a resize, per LXD limit key (limits.cpu, limits.memory; none when absent)
	// Example: {"limits.memory": {"minimum": "64MiB", "maximum": "2GiB"}}
	ResourceBounds DeploymentShapeResourceBounds `json:"resource_bounds,omitempty" yaml:"resource_bounds,omitempty"`

	// Where the instances go in an LXD cluster (doc/placement.md; LXD decides when absent)
	Placement *DeploymentShapePlacement `json:"placement,omitempty" yaml:"placement,omitempty"`

	// The traffic the instances serve and the front door in front of them (doc/traffic.md;
	// none when absent)
	// Example: {"port": 80, "protocol": "http", "listen": "127.0.0.1:8080", "drain_timeout": "30s"}
	Traffic *DeploymentShapeTraffic `json:"traffic,omitempty" yaml:"traffic,omitempty"`

	// Scheduled actions: bounds set at cron times in a time zone (doc/governors.md; none
	// when absent)
	// Example: [{"name": "business-hours", "cron": "0 8 * * 1-5", "time_zone": "Europe/Paris", "scaling_minimum": 4, "scaling_maximum": 20}]
	Schedule []DeploymentShapeScheduledAction `json:"schedule,omitempty" yaml:"schedule,omitempty"`
}

// DeploymentShape represents a shape.
type DeploymentShape struct {
	DeploymentShapePost `yaml:",inline"`
	DeploymentShapePut  `yaml:",inline"`

	// Latest revision of the shape's writable fields (GET .../revisions)
	// Read only: true
	// Example: 3
	Revision int `json:"revision" yaml:"revision"`

	// Current number of instances of the shape
	// Read only: true
	// Example: 2
	ScalingCurrent int `json:"scaling_current" yaml:"scaling_current"`

	// "ok", or "out-of-bounds" when the current size is outside the bounds (a new shape
	// with a minimum, or bounds changed under it); then only changes that move toward the
	// bounds are accepted; "degraded" when autohealing gave up (see status_reason)
	// Read only: true
	// Example: ok
	Status string `json:"status" yaml:"status"`

	// Why the shape is degraded; a change to the shape clears it
	// Read only: true
	// Example: 3 replacements in a row did not become healthy
	StatusReason string `json:"status_reason,omitempty" yaml:"status_reason,omitempty"`

	// Set while the shape's image triggers are suspended (after a rollback), with since
	// when, by whom and why; POST .../triggers/resume resumes them
	// Read only: true
	TriggersSuspended *DeploymentTriggersSuspended `json:"triggers_suspended,omitempty" yaml:"triggers_suspended,omitempty"`

	// Warm pool instances ready to be taken by a launch
	// Read only: true
	// Example: 2
	WarmPoolReady int `json:"warm_pool_ready,omitempty" yaml:"warm_pool_ready,omitempty"`

	// How the instances sit over the placement's failure domains (with a placement only)
	// Read only: true
	PlacementStatus *DeploymentShapePlacementStatus `json:"placement_status,omitempty" yaml:"placement_status,omitempty"`

	// Whether the health check works and autohealing acts or holds (with a health object only)
	// Read only: true
	HealthStatus *DeploymentShapeHealthStatus `json:"health_status,omitempty" yaml:"health_status,omitempty"`
}

// Shape statuses.
const (
	ShapeStatusOK          = "ok"
	ShapeStatusOutOfBounds = "out-of-bounds"
)

// ShapeStatus says whether a size is within a shape's bounds.
func ShapeStatus(current int, minimum int, maximum int) string {
	if current < minimum || current > maximum {
		return ShapeStatusOutOfBounds
	}

	return ShapeStatusOK
}

// Writable returns the modifiable fields of the shape.
func (s *DeploymentShape) Writable() DeploymentShapePut {
	return s.DeploymentShapePut
}
