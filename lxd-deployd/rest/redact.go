package rest

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/redact"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The response edge of secret redaction (package redact says what is secret): handlers
// build the whole object, and these hide its secret values when the caller is not an admin
// (a read-only or admin deployment key, over TLS or as a governor's JWT). Admins see all.

// seesSecrets reports whether the request's caller is shown secret values (admins, not
// read-only web sessions: auth.Caller.SeesSecrets).
func seesSecrets(r *http.Request) bool {
	return auth.CallerFromContext(r.Context()).SeesSecrets()
}

// DeploymentFor is a deployment as the caller may see it: webhook URLs often carry
// credentials in their query, so only admins see them whole.
func DeploymentFor(r *http.Request, d api.Deployment) api.Deployment {
	if seesSecrets(r) {
		return d
	}

	d.GovernorWebhookURL = redact.URL(d.GovernorWebhookURL)
	return redact.Deployment(d)
}

// ShapeFor is a shape as the caller may see it.
func ShapeFor(r *http.Request, s api.DeploymentShape) api.DeploymentShape {
	if seesSecrets(r) {
		return s
	}

	return redact.Shape(s)
}

// RevisionFor is a revision as the caller may see it.
func RevisionFor(r *http.Request, rev api.DeploymentShapeRevision) api.DeploymentShapeRevision {
	if seesSecrets(r) {
		return rev
	}

	return redact.Revision(rev)
}

// ChangesFor is a diff as the caller may see it.
func ChangesFor(r *http.Request, changes []api.DeploymentFieldChange) []api.DeploymentFieldChange {
	if seesSecrets(r) {
		return changes
	}

	return redact.Changes(changes)
}

// RolloutFor is a rollout as the caller may see it: its notes and reason are free text.
func RolloutFor(r *http.Request, ro api.DeploymentRollout) api.DeploymentRollout {
	if seesSecrets(r) {
		return ro
	}

	ro.Notes = redact.Text(ro.Notes)
	ro.Reason = redact.Text(ro.Reason)
	ro.Deployer, ro.Pre, ro.Post = deployerFor(ro.Deployer), deployerFor(ro.Pre), deployerFor(ro.Post)
	return ro
}

// deployerFor is a deployer as a caller who is not an admin may see it: its output may
// hold whatever the deployer printed, so only admins get it (as a health check's).
func deployerFor(d *api.DeploymentRolloutDeployer) *api.DeploymentRolloutDeployer {
	if d == nil {
		return nil
	}

	shown := *d
	shown.Output = ""
	return &shown
}

// ActivityFor is an activity log as the caller may see it.
func ActivityFor(r *http.Request, entries []api.DeploymentActivity) []api.DeploymentActivity {
	if seesSecrets(r) {
		return entries
	}

	return redact.Activity(entries)
}

// InstanceFor is an instance as the caller may see it: a health check's output may hold
// whatever the command printed, so only admins get it; others see the verdict.
func InstanceFor(r *http.Request, instance api.DeploymentInstance) api.DeploymentInstance {
	if seesSecrets(r) || instance.HealthCheck == nil {
		return instance
	}

	check := *instance.HealthCheck
	check.Output = ""
	instance.HealthCheck = &check
	return instance
}
