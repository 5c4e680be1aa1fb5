package api

import "time"

// DeploymentTriggersSuspended says a shape's or a deployment's automatic triggers are
// suspended (seed 002: "all deployment triggers will be retained but suspended" after a
// rollback, and a deployment-wide kill switch): they stay as configured but do not fire
// until POST .../triggers/resume.
type DeploymentTriggersSuspended struct {
	// When they were suspended
	// Example: 2026-11-27T20:00:00Z
	Since time.Time `json:"since" yaml:"since"`

	// Who suspended them
	Requestor DeploymentRequestor `json:"requestor" yaml:"requestor"`

	// Why: "rollback to N" or the notes given with POST .../triggers/suspend
	// Example: rollback to 2
	Reason string `json:"reason" yaml:"reason"`

	// The image a rollback pinned in the shape's template (its source.fingerprint beside
	// the alias); resuming lifts the pin, so the alias is followed again
	// Example: 8d2a5e4e9f0b1c2d
	Image string `json:"image,omitempty" yaml:"image,omitempty"`
}

// DeploymentTriggersPost is the optional body of POST .../triggers/suspend and resume.
type DeploymentTriggersPost struct {
	// Free text recorded with the change
	// Example: investigating the 1.4 image
	Notes string `json:"notes" yaml:"notes"`
}

// DeploymentShapeTrigger is one trigger of a shape (seed 002's DeploymentTriggerPolicy).
type DeploymentShapeTrigger struct {
	// config-change (a new revision that changes the instances starts a rollout) or
	// image-change (the template's image alias naming a new image makes a revision)
	// Example: image-change
	Type string `json:"type" yaml:"type"`

	// image-change only: whether the new image's revision also starts a rollout (default
	// true); without, the revision leaves the instances outdated for a rollout by hand
	// Example: false
	Automatic *bool `json:"automatic,omitempty" yaml:"automatic,omitempty"`
}

// TriggerOf says whether the rollout settings have a trigger of type kind (from trigger or
// triggers alike, so shapes written with trigger keep working), and whether it starts
// rollouts by itself.
func (r DeploymentShapeRollout) TriggerOf(kind string) (has bool, automatic bool) {
	if r.Trigger == kind {
		return true, true
	}

	for _, t := range r.Triggers {
		if t.Type == kind {
			return true, t.Automatic == nil || *t.Automatic
		}
	}

	return false, false
}
