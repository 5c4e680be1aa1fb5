package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
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
func endpoints(a apis) []endpoint {
	admin := action{access: allowAdmin}
	// Credentials and unmasked secrets: admins, not web sessions (authz.RefuseSessionCredentials).
	secretRead := action{access: allowSecretRead}
	credentialWrite := action{access: allowCredentialWrite}
	trusted := action{access: allowTrusted}
	deploymentReader := action{access: a.access.allowDeploymentRead}
	deploymentAdmin := action{access: a.access.allowDeploymentAdmin}
	// The governor API's changes: deploymentAdmin, and only the active governor among
	// deployment keys while one holds the deployment (governor_hold.go).
	activeGovernor := action{access: a.access.allowActiveGovernor}
	// The types API reads manifests only (doc/templates.md).
	types := typesAPI{db: a.deployments.db}
	with := func(base action, h handlerFunc) action {
		base.handler = h
		return base
	}

	// governor also serves an action on the in-instance transports (vsock and the
	// per-container socket): the governor API and GET /1.0, never the management API.
	governor := func(a action) action {
		a.governor = true
		return a
	}

	return []endpoint{
		{
			path: "/",
			get:  action{handler: a.server.root, public: true},
		},
		{
			path: "/1.0",
			get:  governor(action{handler: a.server.get, public: true}),
		},
		{
			// Admins and metrics certificates, as LXD's /1.0/metrics.
			path: "/1.0/metrics",
			get:  action{handler: a.metrics.get, access: allowMetrics},
		},
		{
			path: "/1.0/certificates",
			get:  with(secretRead, a.certificates.list),
			// Public: untrusted clients redeem trust tokens here; the handler lets only
			// admins do anything else.
			post: action{handler: a.certificates.create, public: true},
		},
		{
			path:   "/1.0/certificates/{fingerprint}",
			get:    with(secretRead, a.certificates.get),
			put:    with(credentialWrite, a.certificates.put),
			patch:  with(credentialWrite, a.certificates.patch),
			delete: with(credentialWrite, a.certificates.delete),
		},
		{
			path: "/1.0/deployments",
			get:  with(admin, a.deployments.list),
			post: with(admin, a.deployments.create),
		},
		{
			path:   "/1.0/deployments/{deployment}",
			get:    governor(with(deploymentReader, a.deployments.get)),
			put:    with(admin, a.deployments.put),
			patch:  with(admin, a.deployments.patch),
			post:   with(admin, a.deployments.rename),
			delete: with(admin, a.deployments.delete),
		},
		{
			// The deployment's one active governor (doc/governors.md#one-active-governor).
			path:   "/1.0/deployments/{deployment}/governor",
			get:    governor(with(deploymentReader, a.governorHold.get)),
			put:    governor(with(deploymentAdmin, a.governorHold.put)),
			delete: governor(with(deploymentAdmin, a.governorHold.delete)),
		},
		{
			path: "/1.0/deployments/{deployment}/keys",
			get:  with(secretRead, a.keys.list),
			post: with(credentialWrite, a.keys.create),
		},
		{
			path:   "/1.0/deployments/{deployment}/keys/{key}",
			get:    with(secretRead, a.keys.get),
			put:    with(credentialWrite, a.keys.put),
			patch:  with(credentialWrite, a.keys.patch),
			post:   with(credentialWrite, a.keys.rename),
			delete: with(credentialWrite, a.keys.delete),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes",
			get:  governor(with(deploymentReader, a.shapes.list)),
			post: with(admin, a.shapes.create),
		},
		{
			path:   "/1.0/deployments/{deployment}/shapes/{shape}",
			get:    governor(with(deploymentReader, a.shapes.get)),
			put:    with(admin, a.shapes.put),
			patch:  with(admin, a.shapes.patch),
			post:   with(admin, a.shapes.rename),
			delete: with(admin, a.shapes.delete),
		},
		{
			// Vertical scaling: the governor API too, for the roles that may launch and delete.
			path: "/1.0/deployments/{deployment}/shapes/{shape}/resources",
			put:  governor(with(activeGovernor, a.resize.put)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/revisions",
			get:  governor(with(deploymentReader, a.revisions.list)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/revisions/{revision}",
			get:  governor(with(deploymentReader, a.revisions.get)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/rollback",
			post: with(admin, a.revisions.rollback),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/triggers/resume",
			post: with(admin, a.revisions.shapeTriggersResume),
		},
		{
			path: "/1.0/deployments/{deployment}/triggers/{action:suspend|resume}",
			post: with(admin, a.revisions.deploymentTriggers),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts",
			get:  governor(with(deploymentReader, a.rollouts.list)),
			post: with(admin, a.rollouts.create),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts/{rollout}",
			get:  governor(with(deploymentReader, a.rollouts.get)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/rollouts/{rollout}/{action:pause|resume|cancel|promote|abort}",
			post: with(admin, a.rollouts.action),
		},
		{
			path: "/1.0/deployments/{deployment}/activity",
			get:  governor(with(deploymentReader, a.revisions.activity)),
		},
		{
			path: "/1.0/deployments/{deployment}/manifests",
			get:  with(secretRead, a.deployments.listManifests),
		},
		{
			path: "/1.0/deployments/{deployment}/manifests/{manifest}",
			get:  with(secretRead, a.deployments.showManifest),
		},
		{
			path: "/1.0/deployments/{deployment}/manifests/{manifest}/rollback",
			post: with(admin, a.deployments.rollback),
		},
		{
			path: "/1.0/types",
			get:  with(admin, types.list),
		},
		{
			path: "/1.0/types/{type}",
			get:  with(admin, types.get),
		},
		{
			path: "/1.0/types/{type}/instances",
			get:  with(admin, types.instances),
		},

		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/schedule",
			get:  governor(with(deploymentReader, a.schedule.get)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/endpoints",
			get:  governor(with(deploymentReader, a.endpoints.get)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/scale-request",
			post: with(admin, a.webhooks.scaleRequest),
		},
		{
			path: "/1.0/deployments/{deployment}/webhook/ping",
			post: with(admin, a.webhooks.ping),
		},
		{
			path: "/1.0/deployments/{deployment}/webhook/secret",
			get:  with(secretRead, a.webhooks.secret),
			post: with(credentialWrite, a.webhooks.secret),
		},
		{
			path: "/1.0/deployments/{deployment}/webhook/deliveries",
			get:  with(admin, a.webhooks.deliveries),
		},
		{
			path: "/1.0/deployments/{deployment}/webhook/deliveries/{delivery}",
			get:  with(admin, a.webhooks.getDelivery),
		},
		{
			path: "/1.0/deployments/{deployment}/webhook/deliveries/{delivery}/redeliver",
			post: with(admin, a.webhooks.redeliver),
		},

		// The governor API: deployment keys reach these.
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/instances",
			get:  governor(with(deploymentReader, a.instances.list)),
		},
		{
			path:   "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}",
			get:    governor(with(deploymentReader, a.instances.get)),
			post:   governor(with(activeGovernor, a.instances.create)),
			delete: governor(with(activeGovernor, a.instances.delete)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/state",
			put:  governor(with(activeGovernor, a.instances.putState)),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/lifecycle",
			post: governor(action{handler: a.instances.lifecycleAction, access: a.access.allowInstanceHook}),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}/health",
			put:  governor(action{handler: a.health.report, access: a.access.allowInstanceHealth}),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/rebalance",
			post: governor(with(activeGovernor, a.placement.rebalance)),
		},
		{
			path: "/1.0/lxd-members/{member}/drain",
			post: with(admin, a.placement.drain),
		},
		{
			path: "/1.0/deployments/{deployment}/shapes/{shape}/warm-pool",
			get:  governor(with(deploymentReader, a.shapes.warmPoolList)),
		},

		// Operations and events are scoped by the handlers to what the caller may see.
		{
			path: "/1.0/operations",
			get:  governor(with(trusted, a.operations.list)),
		},
		{
			path:   "/1.0/operations/{id}",
			get:    governor(with(trusted, a.operations.get)),
			delete: governor(with(trusted, a.operations.cancel)),
		},
		{
			path: "/1.0/operations/{id}/wait",
			get:  governor(with(trusted, a.operations.wait)),
		},
		{
			path: "/1.0/events",
			get:  governor(with(trusted, a.operations.streamEvents)),
		},

		// The web view (doc/ui.md): its files are public, sign-in is what its link's
		// secret proves; everything else it reads from the routes above.
		{
			path: "/1.0/ui/links",
			post: with(trusted, a.ui.CreateLink),
		},
		{
			path: "/ui",
			get:  action{handler: a.ui.Redirect, public: true},
		},
		{
			path: "/ui/login",
			post: action{handler: a.ui.Login, public: true},
		},
		{
			path: "/ui/logout",
			post: action{handler: a.ui.Logout, public: true},
		},
		{
			path: "/ui/session",
			get:  with(trusted, a.ui.Session),
		},
		{
			path: "/ui/{path:.*}",
			get:  action{handler: a.ui.Asset, public: true},
		},
	}
}

// allowAdmin lets through the unix socket and trusted client certificates (authz.Admin).
func allowAdmin(r *http.Request) error {
	return authz.Admin(auth.CallerFromContext(r.Context()))
}
