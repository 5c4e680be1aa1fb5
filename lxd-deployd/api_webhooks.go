package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"

	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// deliveriesListed is how many recent deliveries GET .../webhook/deliveries shows.
const deliveriesListed = 100

// webhooksAPI serves a deployment's webhook: scale requests, deliveries and the secret.
type webhooksAPI struct {
	db         *db.Cluster
	dispatcher *webhooks.Dispatcher
	metrics    *metrics.Metrics
}

// newWebhookSecret returns a random signing secret.
func newWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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

	caller := auth.CallerFromContext(r.Context())
	var id string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		if req.Target < shape.ScalingMinimum || req.Target > shape.ScalingMaximum {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "target %d is outside shape %s's bounds [%d, %d]: change the bounds first", req.Target, ref.Shape, shape.ScalingMinimum, shape.ScalingMaximum)
		}

		deployment, err := db.GetDeploymentRow(ctx, tx, deploymentID)
		if err != nil {
			return err
		}

		if deployment.GovernorWebhookURL == "" {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q has no governor_webhook_url: set one so the governor can hear the request", ref.Name)
		}

		id, err = webhooks.Enqueue(ctx, tx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
			Shape:       ref.Shape,
			Target:      req.Target,
			Reason:      req.Reason,
			RequestedBy: caller.String(),
		}, time.Now())
		return err
	})
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

	var id string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		id, err = webhooks.Enqueue(ctx, tx, deploymentID, api.WebhookPing, map[string]string{}, time.Now())
		if err == nil && id == "" {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q has no governor_webhook_url", ref.Name)
		}

		return err
	})
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

	var deliveries []db.Delivery
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		deliveries, err = db.GetDeliveries(ctx, tx, deploymentID, deliveriesListed)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	result := make([]api.WebhookDelivery, 0, len(deliveries))
	for _, d := range deliveries {
		result = append(result, d.API())
	}

	return response.SyncResponse(result)
}

// delivery returns one delivery of the path's deployment.
func (a webhooksAPI) delivery(ctx context.Context, r *http.Request, f func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error) error {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return err
	}

	return a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		d, err := db.GetDelivery(ctx, tx, deploymentID, mux.Vars(r)["delivery"])
		if err != nil {
			return err
		}

		return f(ctx, tx, d)
	})
}

func (a webhooksAPI) getDelivery(r *http.Request) response.Response {
	var result api.WebhookDelivery
	err := a.delivery(r.Context(), r, func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error {
		result = d.API()
		var event api.WebhookEvent
		err := json.Unmarshal(d.Body, &event)
		if err == nil {
			result.Event = &event
		}

		return nil
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(result)
}

func (a webhooksAPI) redeliver(r *http.Request) response.Response {
	err := a.delivery(r.Context(), r, func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error {
		return db.RedeliverDelivery(ctx, tx, d.ID, time.Now())
	})
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

	var secret string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		if r.Method == http.MethodPost {
			secret = newWebhookSecret()
			return db.SetWebhookSecret(ctx, tx, deploymentID, secret)
		}

		secret, err = db.GetWebhookSecret(ctx, tx, deploymentID)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(api.DeploymentWebhookSecret{Secret: secret})
}
