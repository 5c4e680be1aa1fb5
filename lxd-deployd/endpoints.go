package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/ui"
)

// apis are the per-resource handler sets, each holding only what it uses.
type apis struct {
	server       serverAPI
	certificates certificatesAPI
	deployments  deploymentsAPI
	keys         keysAPI
	shapes       shapesAPI
	instances    instancesAPI
	health       instanceHealthAPI
	operations   operationsAPI
	webhooks     webhooksAPI
	metrics      metricsAPI
	revisions    revisionsAPI
	rollouts     rolloutsAPI
	resize       resizeAPI
	placement    placementAPI
	schedule     scheduleAPI
	endpoints    endpointsAPI
	ui           ui.API
	access       access
	governorHold governorHoldAPI
}

// endpoints is the route table: every path of the API, and for each method its handler and
// who may call it.
func endpoints(a apis) []rest.Endpoint {
	admin := rest.Action{Access: allowAdmin}
	// Credentials and unmasked secrets: admins, not web sessions (authz.RefuseSessionCredentials).
	secretRead := rest.Action{Access: allowSecretRead}
	credentialWrite := rest.Action{Access: allowCredentialWrite}
	trusted := rest.Action{Access: allowTrusted}
	deploymentReader := rest.Action{Access: a.access.allowDeploymentRead}
	deploymentAdmin := rest.Action{Access: a.access.allowDeploymentAdmin}
	// The governor API's changes: deploymentAdmin, and only the active governor among
	// deployment keys while one holds the deployment (governor_hold.go).
	activeGovernor := rest.Action{Access: a.access.allowActiveGovernor}
	// The types API reads manifests only (doc/templates.md).
	types := typesAPI{db: a.deployments.db}
	with := func(base rest.Action, h rest.HandlerFunc) rest.Action {
		base.Handler = h
		return base
	}

	// governor also serves an action on the in-instance transports (vsock and the
	// per-container socket): the governor API and GET /1.0, never the management API.
	governor := func(a rest.Action) rest.Action {
		a.Governor = true
		return a
	}

	return []rest.Endpoint{
		{
			Path: "/",
			Get:  rest.Action{Handler: a.server.root, Public: true},
		},
		{
			Path: "/1.0",
			Get:  governor(rest.Action{Handler: a.server.get, Public: true}),
		},
		{
			// Admins and metrics certificates, as LXD's /1.0/metrics.
			Path: "/1.0/metrics",
			Get:  rest.Action{Handler: a.metrics.get, Access: allowMetrics},
		},
		{
			Path: "/1.0/certificates",
			Get:  with(secretRead, a.certificates.list),
			// Public: untrusted clients redeem trust tokens here; the handler lets only
			// admins do anything else.
			Post: rest.Action{Handler: a.certificates.create, Public: true},
		},
		{
			Path:   "/1.0/certificates/{fingerprint}",
			Get:    with(secretRead, a.certificates.get),
			Put:    with(credentialWrite, a.certificates.put),
			Patch:  with(credentialWrite, a.certificates.patch),
			Delete: with(credentialWrite, a.certificates.delete),
		},
		{
			Path: "/1.0/deployments",
			Get:  with(admin, a.deployments.list),
			Post: with(admin, a.deployments.create),
		},
		{
			Path:   "/1.0/deployments/{deployment}",
			Get:    governor(with(deploymentReader, a.deployments.get)),
			Put:    with(admin, a.deployments.put),
			Patch:  with(admin, a.deployments.patch),
			Post:   with(admin, a.deployments.rename),
			Delete: with(admin, a.deployments.delete),
		},
		{
			// The deployment's one active governor (doc/governors.md#one-active-governor).
			Path:   "/1.0/deployments/{deployment}/governor",
			Get:    governor(with(deploymentReader, a.governorHold.get)),
			Put:    governor(with(deploymentAdmin, a.governorHold.put)),
			Delete: governor(with(deploymentAdmin, a.governorHold.delete)),
		},
		{
			Path: "/1.0/deployments/{deployment}/keys",
			Get:  with(secretRead, a.keys.list),
			Post: with(credentialWrite, a.keys.create),
		},
		{
			Path:   "/1.0/deployments/{deployment}/keys/{key}",
			Get:    with(secretRead, a.keys.get),
			Put:    with(credentialWrite, a.keys.put),
			Patch:  with(credentialWrite, a.keys.patch),
			Post:   with(credentialWrite, a.keys.rename),
			Delete: with(credentialWrite, a.keys.delete),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes",
			Get:  governor(with(deploymentReader, a.shapes.list)),
			Post: with(admin, a.shapes.create),
		},
		{
			Path:   "/1.0/deployments/{deployment}/shapes/{shape}",
			Get:    governor(with(deploymentReader, a.shapes.get)),
			Put:    with(admin, a.shapes.put),
			Patch:  with(admin, a.shapes.patch),
			Post:   with(admin, a.shapes.rename),
			Delete: with(admin, a.shapes.delete),
		},
		{
			// Vertical scaling: the governor API too, for the roles that may launch and delete.
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/resources",
			Put:  governor(with(activeGovernor, a.resize.put)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/revisions",
			Get:  governor(with(deploymentReader, a.revisions.list)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/revisions/{revision}",
			Get:  governor(with(deploymentReader, a.revisions.get)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/rollback",
			Post: with(admin, a.revisions.rollback),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/triggers/resume",
			Post: with(admin, a.revisions.shapeTriggersResume),
		},
		{
			Path: "/1.0/deployments/{deployment}/triggers/{action:suspend|resume}",
			Post: with(admin, a.revisions.deploymentTriggers),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts",
			Get:  governor(with(deploymentReader, a.rollouts.list)),
			Post: with(admin, a.rollouts.create),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts/{rollout}",
			Get:  governor(with(deploymentReader, a.rollouts.get)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts/{rollout}/{action:pause|resume|cancel|promote|abort}",
			Post: with(admin, a.rollouts.action),
		},
		{
			Path: "/1.0/deployments/{deployment}/activity",
			Get:  governor(with(deploymentReader, a.revisions.activity)),
		},
		{
			Path: "/1.0/deployments/{deployment}/manifests",
			Get:  with(secretRead, a.deployments.listManifests),
		},
		{
			Path: "/1.0/deployments/{deployment}/manifests/{manifest}",
			Get:  with(secretRead, a.deployments.showManifest),
		},
		{
			Path: "/1.0/deployments/{deployment}/manifests/{manifest}/rollback",
			Post: with(admin, a.deployments.rollback),
		},
		{
			Path: "/1.0/types",
			Get:  with(admin, types.list),
		},
		{
			Path: "/1.0/types/{type}",
			Get:  with(admin, types.get),
		},
		{
			Path: "/1.0/types/{type}/instances",
			Get:  with(admin, types.instances),
		},

		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/schedule",
			Get:  governor(with(deploymentReader, a.schedule.get)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/endpoints",
			Get:  governor(with(deploymentReader, a.endpoints.get)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/scale-request",
			Post: with(admin, a.webhooks.scaleRequest),
		},
		{
			Path: "/1.0/deployments/{deployment}/webhook/ping",
			Post: with(admin, a.webhooks.ping),
		},
		{
			Path: "/1.0/deployments/{deployment}/webhook/secret",
			Get:  with(secretRead, a.webhooks.secret),
			Post: with(credentialWrite, a.webhooks.secret),
		},
		{
			Path: "/1.0/deployments/{deployment}/webhook/deliveries",
			Get:  with(admin, a.webhooks.deliveries),
		},
		{
			Path: "/1.0/deployments/{deployment}/webhook/deliveries/{delivery}",
			Get:  with(admin, a.webhooks.getDelivery),
		},
		{
			Path: "/1.0/deployments/{deployment}/webhook/deliveries/{delivery}/redeliver",
			Post: with(admin, a.webhooks.redeliver),
		},

		// The governor API: deployment keys reach these.
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/instances",
			Get:  governor(with(deploymentReader, a.instances.list)),
		},
		{
			Path:   "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}",
			Get:    governor(with(deploymentReader, a.instances.get)),
			Post:   governor(with(activeGovernor, a.instances.create)),
			Delete: governor(with(activeGovernor, a.instances.delete)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/state",
			Put:  governor(with(activeGovernor, a.instances.putState)),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/lifecycle",
			Post: governor(rest.Action{Handler: a.instances.lifecycleAction, Access: a.access.allowInstanceHook}),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/health",
			Put:  governor(rest.Action{Handler: a.health.report, Access: a.access.allowInstanceHealth}),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/rebalance",
			Post: governor(with(activeGovernor, a.placement.rebalance)),
		},
		{
			Path: "/1.0/lxd-members/{member}/drain",
			Post: with(admin, a.placement.drain),
		},
		{
			Path: "/1.0/deployments/{deployment}/shapes/{shape}/warm-pool",
			Get:  governor(with(deploymentReader, a.shapes.warmPoolList)),
		},

		// Operations and events are scoped by the handlers to what the caller may see.
		{
			Path: "/1.0/operations",
			Get:  governor(with(trusted, a.operations.list)),
		},
		{
			Path:   "/1.0/operations/{id}",
			Get:    governor(with(trusted, a.operations.get)),
			Delete: governor(with(trusted, a.operations.cancel)),
		},
		{
			Path: "/1.0/operations/{id}/wait",
			Get:  governor(with(trusted, a.operations.wait)),
		},
		{
			Path: "/1.0/events",
			Get:  governor(with(trusted, a.operations.streamEvents)),
		},

		// The web view (doc/ui.md): its files are public, sign-in is what its link's
		// secret proves; everything else it reads from the routes above.
		{
			Path: "/1.0/ui/links",
			Post: with(trusted, a.ui.CreateLink),
		},
		{
			Path: "/ui",
			Get:  rest.Action{Handler: a.ui.Redirect, Public: true},
		},
		{
			Path: "/ui/login",
			Post: rest.Action{Handler: a.ui.Login, Public: true},
		},
		{
			Path: "/ui/logout",
			Post: rest.Action{Handler: a.ui.Logout, Public: true},
		},
		{
			Path: "/ui/session",
			Get:  with(trusted, a.ui.Session),
		},
		{
			Path: "/ui/{path:.*}",
			Get:  rest.Action{Handler: a.ui.Asset, Public: true},
		},
	}
}

// allowAdmin lets through the unix socket and trusted client certificates (authz.Admin).
func allowAdmin(r *http.Request) error {
	return authz.Admin(auth.CallerFromContext(r.Context()))
}
