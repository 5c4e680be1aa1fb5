package api

import (
	"time"
)

// DeploymentShapeHealth is how the daemon checks a shape's instances and what it does with
// those that fail. Exactly one of command (exec), ttl, http and tcp is set: doc/health.md
// says what each costs.
type DeploymentShapeHealth struct {
	// Command run inside the instance through LXD exec (argv, no shell); healthy on exit 0
	// Example: ["test", "-f", "/run/ready"]
	Command []string `json:"command" yaml:"command"`

	// The instance reports its own health (PUT .../instances/{instance}/health) at least
	// this often, or a check fails (duration)
	// Example: 30s
	TTL string `json:"ttl,omitempty" yaml:"ttl,omitempty"`

	// An HTTP GET the daemon sends to the instance's address; healthy on a 2xx or 3xx
	HTTP *DeploymentShapeHealthHTTP `json:"http,omitempty" yaml:"http,omitempty"`

	// A TCP connection the daemon opens to the instance's address; healthy when accepted
	TCP *DeploymentShapeHealthTCP `json:"tcp,omitempty" yaml:"tcp,omitempty"`

	// Time between two checks of an instance (duration, default 10s)
	// Example: 10s
	Interval string `json:"interval,omitempty" yaml:"interval,omitempty"`

	// How long one check may run before it counts as failed (duration, default 5s)
	// Example: 5s
	Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`

	// Consecutive passing checks that make an instance healthy (default 1)
	// Example: 1
	HealthyThreshold int `json:"healthy_threshold,omitempty" yaml:"healthy_threshold,omitempty"`

	// Consecutive failing checks that make an instance unhealthy (default 3)
	// Example: 3
	UnhealthyThreshold int `json:"unhealthy_threshold,omitempty" yaml:"unhealthy_threshold,omitempty"`

	// No unhealthy verdict before this long after the instance started (duration, default 30s)
	// Example: 30s
	Grace string `json:"grace,omitempty" yaml:"grace,omitempty"`

	// Replace instances that turn unhealthy or vanish from LXD (a launch, then a delete)
	// Example: true
	Replace bool `json:"replace,omitempty" yaml:"replace,omitempty"`

	// Replacements at a time in this shape (default 1), shared with a running rollout
	// Example: 1
	MaxUnavailable int `json:"max_unavailable,omitempty" yaml:"max_unavailable,omitempty"`

	// Autohealing holds while more than this share of the shape's instances (and at
	// least 2) are unhealthy: a fault they share is likelier than that many broken
	// instances (default 0.5; 1 never holds)
	// Example: 0.5
	HoldShare float64 `json:"hold_share,omitempty" yaml:"hold_share,omitempty"`

	// At most this many replacements started in any replacement_window (default 10)
	// Example: 10
	ReplacementLimit int `json:"replacement_limit,omitempty" yaml:"replacement_limit,omitempty"`

	// The window of replacement_limit (duration, default 10m)
	// Example: 10m
	ReplacementWindow string `json:"replacement_window,omitempty" yaml:"replacement_window,omitempty"`
}

// DeploymentShapeHealthHTTP is an http health check.
type DeploymentShapeHealthHTTP struct {
	// Port on the instance's address
	// Example: 8080
	Port int `json:"port" yaml:"port"`

	// Path of the GET (default /)
	// Example: /healthz
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
}

// DeploymentShapeHealthTCP is a tcp health check.
type DeploymentShapeHealthTCP struct {
	// Port on the instance's address
	// Example: 5432
	Port int `json:"port" yaml:"port"`
}

// Health check kinds, as the health object sets them.
const (
	HealthKindExec = "exec"
	HealthKindTTL  = "ttl"
	HealthKindHTTP = "http"
	HealthKindTCP  = "tcp"
)

// DeploymentInstanceHealthPut is the body of PUT .../instances/{instance}/health: an
// instance of a shape with a ttl check reports its own health.
type DeploymentInstanceHealthPut struct {
	// passing or failing
	// Example: passing
	Status string `json:"status" yaml:"status"`

	// What the instance has to say (at most 1 KiB; admins see it as the check's output)
	// Example: queue depth 3
	Output string `json:"output,omitempty" yaml:"output,omitempty"`
}

// Values of DeploymentInstanceHealthPut.Status.
const (
	HealthReportPassing = "passing"
	HealthReportFailing = "failing"
)

// DeploymentShapeHooks holds an instance before it counts as ready (launch) and before it
// goes (terminate), until its governor, or the instance itself, says it may go on.
type DeploymentShapeHooks struct {
	// How long a deleted instance waits in terminating:wait (duration, empty or 0s = no hook)
	// Example: 5m
	TerminateTimeout string `json:"terminate_timeout,omitempty" yaml:"terminate_timeout,omitempty"`

	// How long a new instance waits in launching:wait (duration, empty or 0s = no hook)
	// Example: 2m
	LaunchTimeout string `json:"launch_timeout,omitempty" yaml:"launch_timeout,omitempty"`

	// What happens when a wait times out: continue (default) or abandon
	// Example: continue
	DefaultAction string `json:"default_action,omitempty" yaml:"default_action,omitempty"`
}

// DeploymentShapeWarmPool keeps instances of the shape made but stopped, so that a launch
// is a rename and a start instead of an image unpack.
type DeploymentShapeWarmPool struct {
	// Instances kept ready; they never count as instances of the shape
	// Example: 2
	Size int `json:"size" yaml:"size"`

	// State the pool instances wait in: stopped (default; frozen is not supported yet)
	// Example: stopped
	State string `json:"state,omitempty" yaml:"state,omitempty"`

	// A scale-in stops the instance and returns it to the pool (when the pool is short and
	// the instance has the shape's current template) instead of deleting it
	// Example: true
	ReuseOnScaleIn bool `json:"reuse_on_scale_in,omitempty" yaml:"reuse_on_scale_in,omitempty"`
}

// Instance health values.
const (
	HealthUnknown   = "unknown"
	HealthStarting  = "starting"
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// Lifecycle hook states of an instance, and the actions that end them.
const (
	LifecycleLaunchingWait   = "launching:wait"
	LifecycleTerminatingWait = "terminating:wait"

	LifecycleActionContinue  = "continue"
	LifecycleActionAbandon   = "abandon"
	LifecycleActionHeartbeat = "heartbeat"
)

// ShapeStatusDegraded: autohealing gave up on the shape after failed replacements in a row.
const ShapeStatusDegraded = "degraded"

// DeploymentInstanceHealth is the last verdict of an instance's health checks.
type DeploymentInstanceHealth struct {
	// unknown (no check yet), starting (in its grace period or below a threshold),
	// healthy or unhealthy
	// Example: healthy
	Status string `json:"status" yaml:"status"`

	// Output of the last check (stdout then stderr, truncated to 1 KiB)
	// Example: ok
	Output string `json:"output,omitempty" yaml:"output,omitempty"`

	// When the last check ran
	// Example: 2026-11-22T19:00:00Z
	CheckedAt *time.Time `json:"checked_at,omitempty" yaml:"checked_at,omitempty"`

	// The latest check could not run (LXD did not answer, exec was refused): no verdict,
	// the status and output are those of the last check that ran
	// Example: true
	Stale bool `json:"stale,omitempty" yaml:"stale,omitempty"`

	// Why the latest check could not run
	// Example: check did not run: LXD did not answer within 2s
	StaleReason string `json:"stale_reason,omitempty" yaml:"stale_reason,omitempty"`
}

// DeploymentInstanceLifecyclePost is the body of POST .../instances/{instance}/lifecycle:
// it ends (or extends) an instance's launching:wait or terminating:wait.
type DeploymentInstanceLifecyclePost struct {
	// continue, abandon, or heartbeat (restart the wait's timeout)
	// Example: continue
	Action string `json:"action" yaml:"action"`
}

// DeploymentShapeWarmPoolInstance is one instance of a shape's warm pool.
type DeploymentShapeWarmPoolInstance struct {
	// Name of the stopped LXD instance
	// Example: web-w1a2b3c4
	Name string `json:"name" yaml:"name"`

	// creating or ready
	// Example: ready
	State string `json:"state" yaml:"state"`

	// Hash of the shape's instance template it was made from, and of the image for an
	// alias the image-change trigger watches (only current ones are used)
	// Example: 3f2a9c1b7d4e
	TemplateHash string `json:"template_hash" yaml:"template_hash"`

	// Example: 2026-11-22T19:00:00Z
	CreatedAt time.Time `json:"created_at" yaml:"created_at"`
}
