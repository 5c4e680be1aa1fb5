package main

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// webhooksAPI serves a deployment's webhook: scale requests, deliveries and the secret
// (package webhooks reads and queues them).
type webhooksAPI struct {
	db         *db.Cluster
	dispatcher *webhooks.Dispatcher
	metrics    *metrics.Metrics
}

// scaleRequest serves POST .../shapes/{shape}/scale-request: an admin asks the governor to
// bring a shape to a size. The platform never scales by itself; the governor decides.
func (a webhooksAPI) scaleRequest(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentShapeScaleRequest
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	id, err := webhooks.ScaleRequest(r.Context(), a.db, ref, req, auth.CallerFromContext(r.Context()).String())
	if err != nil {
		return response.SmartError(err)
	}

	a.dispatcher.Poke()
	a.metrics.ScaleRequest(ref.Project, ref.Name, ref.Shape)
	return response.SyncResponseLocation(map[string]string{"id": id}, api.DeploymentWebhookDeliveryURL(ref.Project, ref.Name, id))
}

// ping queues a ping event, to check the webhook end to end.
func (a webhooksAPI) ping(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	id, err := webhooks.Ping(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	a.dispatcher.Poke()
	return response.SyncResponse(map[string]string{"id": id})
}

func (a webhooksAPI) deliveries(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	result, err := webhooks.Deliveries(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(result)
}

func (a webhooksAPI) getDelivery(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	result, err := webhooks.Delivery(r.Context(), a.db, ref, mux.Vars(r)["delivery"])
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(result)
}

func (a webhooksAPI) redeliver(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	err = webhooks.Redeliver(r.Context(), a.db, ref, mux.Vars(r)["delivery"])
	if err != nil {
		return response.SmartError(err)
	}

	a.dispatcher.Poke()
	return response.EmptySyncResponse()
}

// secret serves GET (show) and POST (rotate) of the signing secret, which never appears in
// the deployment itself.
func (a webhooksAPI) secret(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	secret, err := webhooks.Secret(r.Context(), a.db, ref, r.Method == http.MethodPost)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(api.DeploymentWebhookSecret{Secret: secret})
}
