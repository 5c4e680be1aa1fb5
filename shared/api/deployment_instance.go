package api

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// DeploymentInstancesPost is the optional body of POST .../instances/{name}; the name in
// the URL is the instance's.
type DeploymentInstancesPost struct {
	// The shape in which to create the instance (must match the URL when given)
	// Example: web
	DeploymentShapeName string `json:"shape_name" yaml:"shape_name"`

	// The instance name (must match the URL when given)
	// Example: web01
	InstanceName string `json:"instance_name" yaml:"instance_name"`
}

// DeploymentInstance is an LXD instance that belongs to a shape.
type DeploymentInstance struct {
	// Name of the LXD instance
	// Example: web01
	Name string `json:"name" yaml:"name"`

	// Project of the LXD instance
	// Example: default
	Project string `json:"project" yaml:"project"`

	// Deployment the instance belongs to
	// Example: dep1
	Deployment string `json:"deployment" yaml:"deployment"`

	// Shape the instance belongs to
	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// State recorded by lxd-deployd: creating, created, deleting or missing
	// Example: created
	State string `json:"state" yaml:"state"`

	// Status reported by LXD (Running, Stopped, ...); "Creating" while the row is reserved,
	// "Missing" when LXD has no such instance, "Unknown" while LXD is unavailable
	// Example: Running
	Status string `json:"status" yaml:"status"`

	// The LXD cluster member the instance runs on (empty when LXD is not clustered)
	// Example: m2
	Location string `json:"location,omitempty" yaml:"location,omitempty"`

	// When the instance was created
	// Example: 2026-11-22T19:00:00Z
	CreatedAt time.Time `json:"created_at" yaml:"created_at"`

	// URL of the instance in LXD's API
	// Example: /1.0/instances/web01
	InstanceURL string `json:"instance_url" yaml:"instance_url"`

	// Hash of the shape's instance template the instance was created from; instances
	// created before a template change keep the old hash
	// Example: 3f2a9c1b7d4e
	TemplateHash string `json:"template_hash" yaml:"template_hash"`

	// Revision of the shape the instance was made from
	// Example: 2
	Revision int `json:"revision" yaml:"revision"`

	// True when the instance was made from an older revision than the shape's latest:
	// a rollout replaces it
	// Example: false
	Outdated bool `json:"outdated" yaml:"outdated"`

	// The limits the instance runs with, as LXD holds them (limits.cpu, limits.memory, ...)
	// Example: {"limits.memory": "256MiB"}
	Limits map[string]string `json:"limits,omitempty" yaml:"limits,omitempty"`

	// CPU and memory use of a running instance, from LXD's /1.0/metrics (listings with
	// recursion=1; absent when LXD did not report it)
	Usage *DeploymentInstanceUsage `json:"usage,omitempty" yaml:"usage,omitempty"`

	// Health check verdict: unknown, starting, healthy or unhealthy
	// Example: healthy
	Health string `json:"health" yaml:"health"`

	// Last health check result (absent before the first check)
	HealthCheck *DeploymentInstanceHealth `json:"health_check,omitempty" yaml:"health_check,omitempty"`

	// Lifecycle hook the instance waits in: launching:wait, terminating:wait, or empty
	// Example: terminating:wait
	Lifecycle string `json:"lifecycle,omitempty" yaml:"lifecycle,omitempty"`

	// When the wait's default action applies unless a heartbeat extends it
	// Example: 2026-11-22T19:05:00Z
	LifecycleDeadline *time.Time `json:"lifecycle_deadline,omitempty" yaml:"lifecycle_deadline,omitempty"`

	// Live state from LXD (processes, memory, CPU), only when a single instance is read
	LiveState *lxdapi.InstanceState `json:"live_state,omitempty" yaml:"live_state,omitempty"`
}
