package webhooks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What a deployment's webhook API (scale requests, deliveries, the secret) asks of this
// package: package main parses the request and answers.

// DeliveriesListed is how many recent deliveries GET .../webhook/deliveries shows.
const DeliveriesListed = 100

// NewSecret returns a random signing secret.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// inDeployment runs f in a transaction with the id of the deployment ref names.
func inDeployment(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, f func(ctx context.Context, tx *sql.Tx, deploymentID int64) error) error {
	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		return f(ctx, tx, deploymentID)
	})
}

// ScaleRequest queues a scale request (an admin asks the governor to bring a shape to a
// size; the platform never scales by itself) and returns its delivery id. The target must
// be within the shape's bounds, and the deployment must have a governor webhook.
func ScaleRequest(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, req api.DeploymentShapeScaleRequest, requestedBy string) (string, error) {
	var id string
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

		id, err = Enqueue(ctx, tx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
			Shape:       ref.Shape,
			Target:      req.Target,
			Reason:      req.Reason,
			RequestedBy: requestedBy,
		}, time.Now())
		return err
	})

	return id, err
}

// Ping queues a ping event, to check the webhook end to end, and returns its delivery id.
func Ping(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef) (string, error) {
	var id string
	err := inDeployment(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, deploymentID int64) (err error) {
		id, err = Enqueue(ctx, tx, deploymentID, api.WebhookPing, map[string]string{}, time.Now())
		if err == nil && id == "" {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q has no governor_webhook_url", ref.Name)
		}

		return err
	})

	return id, err
}

// Deliveries are the deployment's latest deliveries (DeliveriesListed), as the API shows them.
func Deliveries(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef) ([]api.WebhookDelivery, error) {
	var deliveries []db.Delivery
	err := inDeployment(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, deploymentID int64) (err error) {
		deliveries, err = db.GetDeliveries(ctx, tx, deploymentID, DeliveriesListed)
		return err
	})
	if err != nil {
		return nil, err
	}

	result := make([]api.WebhookDelivery, 0, len(deliveries))
	for _, d := range deliveries {
		result = append(result, d.API())
	}

	return result, nil
}

// delivery runs f on one delivery of the deployment ref names.
func delivery(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, id string, f func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error) error {
	return inDeployment(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, deploymentID int64) error {
		d, err := db.GetDelivery(ctx, tx, deploymentID, id)
		if err != nil {
			return err
		}

		return f(ctx, tx, d)
	})
}

// Delivery is one delivery of the deployment, with the event it carries.
func Delivery(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, id string) (api.WebhookDelivery, error) {
	var result api.WebhookDelivery
	err := delivery(ctx, cluster, ref, id, func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error {
		result = d.API()
		var event api.WebhookEvent
		err := json.Unmarshal(d.Body, &event)
		if err == nil {
			result.Event = &event
		}

		return nil
	})

	return result, err
}

// Redeliver queues a delivery of the deployment again.
func Redeliver(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, id string) error {
	return delivery(ctx, cluster, ref, id, func(ctx context.Context, tx *sql.Tx, d *db.Delivery) error {
		return db.RedeliverDelivery(ctx, tx, d.ID, time.Now())
	})
}

// Secret returns the deployment's signing secret, a new one when rotate is set. The secret
// never appears in the deployment itself.
func Secret(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, rotate bool) (string, error) {
	var secret string
	err := inDeployment(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, deploymentID int64) (err error) {
		if rotate {
			secret = NewSecret()
			return db.SetWebhookSecret(ctx, tx, deploymentID, secret)
		}

		secret, err = db.GetWebhookSecret(ctx, tx, deploymentID)
		return err
	})

	return secret, err
}
