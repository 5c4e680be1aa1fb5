package api

import (
	"time"
)

// DeploymentShapeHealthStatus is what the daemon makes of a shape's health checks as a
// whole: whether the check itself works, and whether autohealing acts or holds back
// (doc/health.md#verdicts-and-holds).
type DeploymentShapeHealthStatus struct {
	// ok (the check started on some instance since it last changed), broken (it could
	// start on none: a command the image lacks, a port nothing listens on), or unknown
	// (no check has run since it last changed)
	// Read only: true
	// Example: broken
	Check string `json:"check" yaml:"check"`

	// Why the check is broken
	// Read only: true
	// Example: the check cannot start on any of the 4 instances (exit code 127: command not found): fix health.command
	CheckReason string `json:"check_reason,omitempty" yaml:"check_reason,omitempty"`

	// active, held (autohealing replaces nothing: see autohealing_reason), or off
	// (health.replace is false)
	// Read only: true
	// Example: held
	Autohealing string `json:"autohealing" yaml:"autohealing"`

	// Why autohealing holds, and what lifts the hold
	// Read only: true
	// Example: 3 of 4 instances are unhealthy (more than health.hold_share 0.5): a fault they share is likelier than 3 broken instances; the hold lifts when fewer are unhealthy
	AutohealingReason string `json:"autohealing_reason,omitempty" yaml:"autohealing_reason,omitempty"`

	// Since when autohealing holds
	// Read only: true
	// Example: 2026-11-27T19:00:00Z
	Since *time.Time `json:"since,omitempty" yaml:"since,omitempty"`
}

// Values of DeploymentShapeHealthStatus.Check.
const (
	HealthCheckUnknown = "unknown"
	HealthCheckOK      = "ok"
	HealthCheckBroken  = "broken"
)

// Values of DeploymentShapeHealthStatus.Autohealing.
const (
	AutohealingActive = "active"
	AutohealingHeld   = "held"
	AutohealingOff    = "off"
)
