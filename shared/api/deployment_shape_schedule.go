package api

import "time"

// DeploymentShapeScheduledAction sets a shape's scaling bounds at the times a cron
// expression names in an IANA time zone, like an AWS scheduled action (doc/governors.md,
// "Scheduled actions"). The bounds it sets stay until the next action or an edit.
type DeploymentShapeScheduledAction struct {
	// Name of the action, unique in the shape's schedule (the activity log's why)
	// Example: business-hours
	Name string `json:"name" yaml:"name"`

	// When it fires: minute hour day-of-month month day-of-week
	// Example: 0 8 * * 1-5
	Cron string `json:"cron" yaml:"cron"`

	// IANA time zone the cron expression reads in (UTC when empty)
	// Example: Europe/Paris
	TimeZone string `json:"time_zone,omitempty" yaml:"time_zone,omitempty"`

	// The shape's scaling_minimum from then on (required)
	// Example: 4
	ScalingMinimum *int `json:"scaling_minimum" yaml:"scaling_minimum"`

	// The shape's scaling_maximum from then on (required)
	// Example: 20
	ScalingMaximum *int `json:"scaling_maximum" yaml:"scaling_maximum"`

	// A size to ask the governor for, within the new bounds (none when absent)
	// Example: 6
	Size *int `json:"size,omitempty" yaml:"size,omitempty"`
}

// DeploymentShapeSchedule is a shape's schedule as the daemon runs it (GET
// /1.0/deployments/{deployment}/shapes/{shape}/schedule).
type DeploymentShapeSchedule struct {
	// The daemon's time the occurrences are counted from
	// Example: 2026-11-27T20:00:00Z
	Now time.Time `json:"now" yaml:"now"`

	// Until when occurrences were looked at (none before the scheduler first saw this
	// schedule: it fires only occurrences after that)
	CheckedAt *time.Time `json:"checked_at,omitempty" yaml:"checked_at,omitempty"`

	// The action that fired last, and the occurrence it fired for (none yet when empty)
	// Example: business-hours
	LastAction string     `json:"last_action,omitempty" yaml:"last_action,omitempty"`
	LastAt     *time.Time `json:"last_at,omitempty" yaml:"last_at,omitempty"`

	// Each action with its next occurrences, in the action's time zone
	Actions []DeploymentShapeScheduleEntry `json:"actions" yaml:"actions"`
}

// DeploymentShapeScheduleEntry is one action and when it fires next.
type DeploymentShapeScheduleEntry struct {
	DeploymentShapeScheduledAction `yaml:",inline"`

	// Its next occurrences (empty if it never fires again)
	// Example: ["2026-11-30T08:00:00+01:00"]
	Next []time.Time `json:"next" yaml:"next"`
}
