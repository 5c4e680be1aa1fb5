package api

import (
	"encoding/json"
	"time"
)

// Webhook event types the platform sends to a deployment's governor_webhook_url.
const (
	WebhookScaleRequest = "scale-request"
	WebhookMetrics      = "metrics"
	WebhookLifecycle    = "lifecycle"
	WebhookPing         = "ping"
)

// WebhookEvent is the body of every webhook delivery.
type WebhookEvent struct {
	// Unique id of the event: a governor dedupes redeliveries by it
	// Example: 9f1c2e4a-...
	ID string `json:"id" yaml:"id"`

	// When the event happened
	// Example: 2026-11-22T19:00:00Z
	Timestamp time.Time `json:"timestamp" yaml:"timestamp"`

	// Project and deployment the event is about
	// Example: default
	Project string `json:"project" yaml:"project"`

	// Example: dep1
	Deployment string `json:"deployment" yaml:"deployment"`

	// scale-request, metrics, lifecycle or ping
	// Example: scale-request
	Type string `json:"type" yaml:"type"`

	// One of WebhookScaleRequestMetadata, WebhookMetricsMetadata, WebhookLifecycleMetadata
	Metadata json.RawMessage `json:"metadata" yaml:"metadata"`
}

// DeploymentShapeScaleRequest is the body of POST .../shapes/{shape}/scale-request: an admin
// asks the governor to bring the shape to a size. The platform does not scale by itself.
type DeploymentShapeScaleRequest struct {
	// Size asked for, within the shape's bounds
	// Example: 3
	Target int `json:"target" yaml:"target"`

	// Why, for the governor's logs
	// Example: expected traffic peak
	Reason string `json:"reason" yaml:"reason"`
}

// WebhookScaleRequestMetadata asks the governor to scale a shape.
type WebhookScaleRequestMetadata struct {
	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// Example: 3
	Target int `json:"target" yaml:"target"`

	// Example: expected traffic peak
	Reason string `json:"reason" yaml:"reason"`

	// Who asked: "unix", "client:<certificate name>(<fingerprint prefix>)" for an admin
	// over HTTPS, or "lxd-deployd" for the platform itself (new shape, bounds change,
	// instance missing)
	// Example: unix
	RequestedBy string `json:"requested_by" yaml:"requested_by"`
}

// WebhookMetricsMetadata carries resource usage per shape and instance.
type WebhookMetricsMetadata struct {
	// The deployment's metrics interval in seconds (CPU rates span the last two distinct
	// readings of LXD's metrics, which LXD caches for several seconds)
	// Example: 60
	IntervalSeconds float64 `json:"interval_seconds" yaml:"interval_seconds"`

	// Shapes by name
	Shapes map[string]WebhookShapeMetrics `json:"shapes" yaml:"shapes"`
}

// WebhookShapeMetrics is the usage of one shape.
type WebhookShapeMetrics struct {
	// Example: 2
	ScalingCurrent int `json:"scaling_current" yaml:"scaling_current"`

	// Example: 1
	ScalingMinimum int `json:"scaling_minimum" yaml:"scaling_minimum"`

	// Example: 5
	ScalingMaximum int `json:"scaling_maximum" yaml:"scaling_maximum"`

	// Instances by name
	Instances map[string]WebhookInstanceMetrics `json:"instances" yaml:"instances"`

	// What the front door measured for the shape (with traffic and a door only;
	// doc/traffic.md)
	Traffic *WebhookTrafficMetrics `json:"traffic,omitempty" yaml:"traffic,omitempty"`
}

// WebhookTrafficMetrics is what the front door measured for a shape or an instance.
type WebhookTrafficMetrics struct {
	// Requests (http) or connections (tcp) per second over the last second
	// Example: 212.5
	RequestRate float64 `json:"request_rate" yaml:"request_rate"`

	// Connections open now
	// Example: 14
	Sessions int `json:"sessions" yaml:"sessions"`

	// Requests waiting for an instance
	// Example: 0
	Queue int `json:"queue" yaml:"queue"`

	// Average response time over the last 1024 requests, in seconds
	// Example: 0.004
	ResponseTimeSeconds float64 `json:"response_time_seconds" yaml:"response_time_seconds"`
}

// WebhookInstanceMetrics is the usage of one instance, from LXD's /1.0/metrics.
type WebhookInstanceMetrics struct {
	// Example: Running
	Status string `json:"status" yaml:"status"`

	// Health check verdict: unknown, starting, healthy or unhealthy
	// Example: healthy
	Health string `json:"health,omitempty" yaml:"health,omitempty"`

	// Total CPU time used, in seconds
	// Example: 12.5
	CPUSeconds float64 `json:"cpu_seconds" yaml:"cpu_seconds"`

	// CPU used over the interval, in cores (1.0 = one core busy); absent on the first sample
	// Example: 0.75
	CPURate *float64 `json:"cpu_rate,omitempty" yaml:"cpu_rate,omitempty"`

	// Example: 104857600
	MemoryUsageBytes int64 `json:"memory_usage_bytes" yaml:"memory_usage_bytes"`

	// Memory limit in bytes (0: no limit known)
	// Example: 536870912
	MemoryLimitBytes int64 `json:"memory_limit_bytes" yaml:"memory_limit_bytes"`

	// What the front door measured for the instance (with traffic and a door only)
	Traffic *WebhookTrafficMetrics `json:"traffic,omitempty" yaml:"traffic,omitempty"`
}

// WebhookLifecycleMetadata reports something that happened to an instance or shape.
type WebhookLifecycleMetadata struct {
	// deployment-instance-created, -deleted, -stopped, -missing, -orphaned, deployment-shape-out-of-bounds,
	// deployment-shape-rollout-started, -step, -paused, -resumed, -promoted, -completed, -failed, -cancelled, -reverted
	// Example: deployment-instance-missing
	Action string `json:"action" yaml:"action"`

	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// Example: web1
	Instance string `json:"instance,omitempty" yaml:"instance,omitempty"`

	// Why, when the platform acted by itself (autohealing, hooks)
	// Example: instance web1 failed its health check 3 times
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`

	// For deployment-instance-terminating and -launching: when the wait's default action
	// applies unless a heartbeat extends it
	// Example: 2026-11-22T19:05:00Z
	Deadline *time.Time `json:"deadline,omitempty" yaml:"deadline,omitempty"`
}

// WebhookDelivery is the record of one event's delivery, for GET .../webhook/deliveries.
type WebhookDelivery struct {
	// Example: 9f1c2e4a-...
	ID string `json:"id" yaml:"id"`

	// Example: scale-request
	Type string `json:"type" yaml:"type"`

	// pending, delivered or failed (gave up after the last attempt)
	// Example: delivered
	Status string `json:"status" yaml:"status"`

	// Example: 2
	Attempts int `json:"attempts" yaml:"attempts"`

	// HTTP status of the last attempt (0: no answer)
	// Example: 200
	LastResponseCode int `json:"last_response_code" yaml:"last_response_code"`

	// Why the last attempt failed
	// Example: connection refused
	LastError string `json:"last_error" yaml:"last_error"`

	// Example: 2026-11-22T19:00:00Z
	CreatedAt time.Time `json:"created_at" yaml:"created_at"`

	// When the next attempt is due (pending only)
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty" yaml:"next_attempt_at,omitempty"`

	// When it was delivered
	DeliveredAt *time.Time `json:"delivered_at,omitempty" yaml:"delivered_at,omitempty"`

	// The event as sent
	Event *WebhookEvent `json:"event,omitempty" yaml:"event,omitempty"`
}

// DeploymentWebhookSecret is the shared secret deliveries are signed with.
type DeploymentWebhookSecret struct {
	// Example: 3b1f...
	Secret string `json:"secret" yaml:"secret"`
}
