package api

import (
	"encoding/json"
	"strconv"
	"time"
)

// Rollout strategies.
const (
	RolloutRolling  = "rolling"
	RolloutRecreate = "recreate"
	RolloutCanary   = "canary"

	// RolloutCustom runs an admin's deployer image (rollout.custom) to carry out the rollout.
	RolloutCustom = "custom"
)

// Rollout triggers: what starts a rollout besides POST .../rollouts.
const (
	RolloutTriggerManual       = "manual"
	RolloutTriggerConfigChange = "config-change"
	RolloutTriggerImageChange  = "image-change"
)

// Rollout statuses.
const (
	RolloutRunning   = "running"
	RolloutPaused    = "paused"
	RolloutComplete  = "complete"
	RolloutFailed    = "failed"
	RolloutCancelled = "cancelled"
	RolloutReverted  = "reverted"
)

// DeploymentShapeRollout says how new revisions of a shape reach its running instances.
// Every field is optional; the zero value is a manual rolling rollout with max_surge 1 and
// max_unavailable 0.
type DeploymentShapeRollout struct {
	// rolling (default), recreate, canary or custom
	// Example: rolling
	Strategy string `json:"strategy,omitempty" yaml:"strategy,omitempty"`

	// Instances a rolling rollout may add above the size (a count or a percentage of the
	// size, rounded up; default 1), never above scaling_maximum
	// Example: 25%
	MaxSurge RolloutCount `json:"max_surge,omitempty" yaml:"max_surge,omitempty"`

	// Instances that may be unready during a rolling rollout (a count or a percentage of
	// the size, rounded down; default 0)
	// Example: 0
	MaxUnavailable RolloutCount `json:"max_unavailable,omitempty" yaml:"max_unavailable,omitempty"`

	// How long a new instance must stay Running before it counts as ready (default 0s)
	// Example: 10s
	MinReady string `json:"min_ready,omitempty" yaml:"min_ready,omitempty"`

	// How long a rollout may go without progress before it fails (default 10m)
	// Example: 10m
	ProgressDeadline string `json:"progress_deadline,omitempty" yaml:"progress_deadline,omitempty"`

	// On failure, roll back to the last revision whose rollout completed and roll it out
	// Example: true
	AutoRevert bool `json:"auto_revert,omitempty" yaml:"auto_revert,omitempty"`

	// manual (default), config-change (a new revision starts a rollout) or image-change
	// (the image alias of the template pointing to a new image starts one)
	// Example: config-change
	Trigger string `json:"trigger,omitempty" yaml:"trigger,omitempty"`

	// Several triggers at once (seed 002's trigger policies), instead of trigger: each
	// config-change or image-change, the latter with its automatic flag
	// Example: [{"type": "config-change"}, {"type": "image-change", "automatic": false}]
	Triggers []DeploymentShapeTrigger `json:"triggers,omitempty" yaml:"triggers,omitempty"`

	// The canary strategy's settings
	Canary *DeploymentShapeRolloutCanary `json:"canary,omitempty" yaml:"canary,omitempty"`

	// The custom strategy's deployer (doc/rollouts.md#custom-deployers)
	Custom *DeploymentShapeRolloutCustom `json:"custom,omitempty" yaml:"custom,omitempty"`

	// A transient instance run before a rolling, recreate or canary rollout replaces
	// anything, whose exit code gates the rollout (doc/rollouts.md#hooks)
	Pre *DeploymentShapeRolloutHook `json:"pre,omitempty" yaml:"pre,omitempty"`

	// A transient instance run once every instance is replaced and ready, before the
	// rollout completes; a failure fails the rollout
	Post *DeploymentShapeRolloutHook `json:"post,omitempty" yaml:"post,omitempty"`
}

// DeploymentShapeRolloutCanary configures the canary strategy.
type DeploymentShapeRolloutCanary struct {
	// Instances replaced before the rollout pauses for promote or abort (default 1)
	// Example: 1
	Count int `json:"count,omitempty" yaml:"count,omitempty"`
}

// RolloutCount is a number of instances ("2" or 2) or a percentage of the size ("25%").
// In JSON a count is a number and a percentage a string, as Kubernetes' IntOrString.
type RolloutCount string

// UnmarshalJSON accepts a number or a string.
func (c *RolloutCount) UnmarshalJSON(data []byte) error {
	var n json.Number
	if json.Unmarshal(data, &n) == nil {
		*c = RolloutCount(n.String())
		return nil
	}

	var s string
	err := json.Unmarshal(data, &s)
	if err != nil {
		return err
	}

	*c = RolloutCount(s)
	return nil
}

// MarshalJSON writes a whole count as a number and anything else as a string.
func (c RolloutCount) MarshalJSON() ([]byte, error) {
	n, err := strconv.Atoi(string(c))
	if err == nil {
		return json.Marshal(n)
	}

	return json.Marshal(string(c))
}

// DeploymentShapeRevision is one immutable version of a shape's writable fields.
type DeploymentShapeRevision struct {
	// Revision number, growing from 1
	// Example: 3
	Revision int `json:"revision" yaml:"revision"`

	// The shape's writable fields at this revision
	Shape DeploymentShapePut `json:"shape" yaml:"shape"`

	// Why the revision was made: api, apply manifest-N, rollback to N, image-change
	// Example: api
	Cause string `json:"cause" yaml:"cause"`

	// Who made it
	Requestor DeploymentRequestor `json:"requestor" yaml:"requestor"`

	// Free text given with the change (?notes= or a notes field)
	// Example: bump to debian 13
	Notes string `json:"notes" yaml:"notes"`

	// When it was made
	// Example: 2026-11-23T18:00:00Z
	CreatedAt time.Time `json:"created_at" yaml:"created_at"`

	// Instances of the shape made from this revision
	// Example: 2
	Instances int `json:"instances" yaml:"instances"`

	// The image the template resolved to at this revision: the fingerprint its alias named
	// (seen by the image trigger) or the one it names; empty when not known. A rollback to
	// this revision makes new instances, and its rollout, from exactly this image.
	// Example: 8d2a5e4e9f0b
	ImageFingerprint string `json:"image_fingerprint" yaml:"image_fingerprint"`
}

// DeploymentShapeRevisionDiff is the answer of GET .../revisions/{n}?diff={m}: the fields
// that differ from revision m to revision n, as a dry-run plan lists them.
type DeploymentShapeRevisionDiff struct {
	// The revision compared from
	// Example: 1
	From int `json:"from" yaml:"from"`

	// The revision compared to
	// Example: 2
	To int `json:"to" yaml:"to"`

	// The changed fields
	Changes []DeploymentFieldChange `json:"changes" yaml:"changes"`
}

// DeploymentShapeRollbackPost asks for a shape's writable fields as they were at an
// earlier revision (seed 002's rollback): it makes a new revision.
type DeploymentShapeRollbackPost struct {
	// The revision to go back to; 0 means the one before the latest
	// Example: 1
	Revision int `json:"revision" yaml:"revision"`

	// Restore the instance template, config, description and rollout settings (default true)
	// Example: true
	Template *bool `json:"template,omitempty" yaml:"template,omitempty"`

	// Restore the scaling bounds (default false)
	// Example: false
	Scaling bool `json:"scaling" yaml:"scaling"`

	// Free text recorded with the new revision
	// Example: 13 broke the login page
	Notes string `json:"notes" yaml:"notes"`

	// Start a rollout of the rollback (cause "rollback to N") in the same transaction;
	// default: when the restored trigger is config-change and the deployment's triggers
	// are not suspended
	// Example: true
	Rollout *bool `json:"rollout,omitempty" yaml:"rollout,omitempty"`
}

// DeploymentShapeRollback is the answer to a rollback, and with ?dry-run=1 its plan.
type DeploymentShapeRollback struct {
	// The new revision (with dry-run, the one it would make)
	// Example: 4
	Revision int `json:"revision" yaml:"revision"`

	// The rollout the rollback started (or would start), or 0
	// Example: 0
	Rollout int `json:"rollout" yaml:"rollout"`

	// What happens to the running instances
	// Example: the template changed for new instances only: start a rollout to replace the running ones
	Message string `json:"message" yaml:"message"`

	// True when nothing was changed (?dry-run=1)
	// Example: false
	DryRun bool `json:"dry_run" yaml:"dry_run"`

	// The fields the rollback changes, from the latest revision to the new one
	Changes []DeploymentFieldChange `json:"changes" yaml:"changes"`

	// The instances the rollback leaves outdated: its rollout (or the next one) replaces them
	// Example: ["web-r3-9f2c1a"]
	Outdated []string `json:"outdated" yaml:"outdated"`

	// Set when the shape's image triggers are suspended after the rollback
	TriggersSuspended *DeploymentTriggersSuspended `json:"triggers_suspended,omitempty" yaml:"triggers_suspended,omitempty"`
}

// DeploymentRolloutsPost starts a rollout of a shape's latest revision.
type DeploymentRolloutsPost struct {
	// Free text recorded with the rollout
	// Example: ship 1.4
	Notes string `json:"notes" yaml:"notes"`
}

// DeploymentRollout is one rollout: the replacement of a shape's outdated instances by
// instances of its latest revision.
type DeploymentRollout struct {
	// Number of the rollout within the shape
	// Example: 2
	Number int `json:"number" yaml:"number"`

	// Shape rolled out
	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// running, paused, complete, failed, cancelled or reverted
	// Example: running
	Status string `json:"status" yaml:"status"`

	// Where the rollout is: starting, replace, recreate, canary, wait-promote, paused, resumed, done
	// Example: replace
	Phase string `json:"phase" yaml:"phase"`

	// Why the rollout is where it is (the failure, who paused it, ...)
	// Example: no progress for 10m0s: instance web-r3-x1 never became ready
	Reason string `json:"reason" yaml:"reason"`

	// The revision instances are replaced with (follows the shape's latest)
	// Example: 3
	Revision int `json:"revision" yaml:"revision"`

	// The latest revision when the rollout started
	// Example: 2
	FromRevision int `json:"from_revision" yaml:"from_revision"`

	// The rollout settings in effect
	Strategy DeploymentShapeRollout `json:"strategy" yaml:"strategy"`

	// What started it: api, config-change, image-change, rollback to N, auto-revert
	// Example: api
	Cause string `json:"cause" yaml:"cause"`

	// Who started it
	Requestor DeploymentRequestor `json:"requestor" yaml:"requestor"`

	// Notes given when it started
	Notes string `json:"notes" yaml:"notes"`

	// The size being kept: the shape's size when the rollout started, moved by the
	// governor's launches and deletes meanwhile
	// Example: 4
	Size int `json:"size" yaml:"size"`

	// Instances of the shape at the rollout's revision
	// Example: 2
	Updated int `json:"updated" yaml:"updated"`

	// Of those, ready ones
	// Example: 1
	Ready int `json:"ready" yaml:"ready"`

	// Instances still at an older revision
	// Example: 2
	Outdated int `json:"outdated" yaml:"outdated"`

	// The deployer of a custom rollout (its output for admins only)
	Deployer *DeploymentRolloutDeployer `json:"deployer,omitempty" yaml:"deployer,omitempty"`

	// The rollout's pre and post hooks, once started (their output for admins only)
	Pre  *DeploymentRolloutDeployer `json:"pre,omitempty" yaml:"pre,omitempty"`
	Post *DeploymentRolloutDeployer `json:"post,omitempty" yaml:"post,omitempty"`

	// When it started, last changed, and finished
	CreatedAt  time.Time  `json:"created_at" yaml:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at" yaml:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty" yaml:"finished_at,omitempty"`
}

// Finished reports whether the rollout is over.
func (r DeploymentRollout) Finished() bool {
	return r.Status != RolloutRunning && r.Status != RolloutPaused
}

// DeploymentActivity is one entry of a deployment's activity log: a scale change, a new
// revision, a rollout step or a rollback.
type DeploymentActivity struct {
	// Entry id, growing; ?since= takes one to list only newer entries
	// Example: 120
	ID int64 `json:"id" yaml:"id"`

	// When it happened
	// Example: 2026-11-23T18:00:00Z
	Time time.Time `json:"time" yaml:"time"`

	// Shape concerned (empty for the deployment itself)
	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// What happened: scale-up, scale-down, revision, rollback, rollout-started,
	// rollout-step, rollout-complete, rollout-failed, rollout-paused, ...
	// Example: scale-up
	Action string `json:"action" yaml:"action"`

	// The size before and after a scale change
	// Example: 2
	From int `json:"from" yaml:"from"`
	// Example: 3
	To int `json:"to" yaml:"to"`

	// Who: governor, admin, rollout, reconcile, autoheal
	// Example: governor
	Who string `json:"who" yaml:"who"`

	// The requestor behind it
	Requestor DeploymentRequestor `json:"requestor" yaml:"requestor"`

	// Why, in words
	// Example: launch web-3 (governor API)
	Why string `json:"why" yaml:"why"`
}
