package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Webhook delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is a queued webhook event and what is needed to send it.
type Delivery struct {
	ID           int64
	UUID         string
	DeploymentID int64
	Type         string
	Body         []byte
	Status       string
	Attempts     int
	ResponseCode int
	LastError    string
	CreatedAt    time.Time
	NextAttempt  time.Time
	DeliveredAt  *time.Time

	// Where and how to send it, from the deployment at claim time.
	URL    string
	Secret string
	Config map[string]string

	// Project and Deployment name the deployment, for metrics labels.
	Project    string
	Deployment string
}

// API returns the delivery as the API shows it.
func (d Delivery) API() api.WebhookDelivery {
	result := api.WebhookDelivery{
		ID:               d.UUID,
		Type:             d.Type,
		Status:           d.Status,
		Attempts:         d.Attempts,
		LastResponseCode: d.ResponseCode,
		LastError:        d.LastError,
		CreatedAt:        d.CreatedAt,
		DeliveredAt:      d.DeliveredAt,
	}

	if d.Status == DeliveryPending {
		next := d.NextAttempt
		result.NextAttemptAt = &next
	}

	return result
}

// EnqueueDelivery stores an event for delivery. Events are queued in the database before
// any attempt, so that they survive a restart.
func EnqueueDelivery(ctx context.Context, tx *sql.Tx, deploymentID int64, uuid string, eventType string, body []byte, now time.Time) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO webhook_deliveries (uuid, deployment_id, type, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?)",
		uuid, deploymentID, eventType, string(body), now.UTC(), now.UTC())
	if err != nil {
		return fmt.Errorf("queue webhook delivery: %w", err)
	}

	return nil
}

const deliveryColumns = `w.id, w.uuid, w.deployment_id, w.type, w.body, w.status, w.attempts, w.last_response_code, w.last_error, w.created_at, w.next_attempt_at, w.delivered_at, d.governor_webhook_url, d.webhook_secret, d.project, d.name`

func scanDeliveries(rows *sql.Rows) ([]Delivery, error) {
	defer func() { _ = rows.Close() }()
	deliveries := []Delivery{}
	for rows.Next() {
		var d Delivery
		var body string
		var delivered sql.NullTime
		err := rows.Scan(&d.ID, &d.UUID, &d.DeploymentID, &d.Type, &body, &d.Status, &d.Attempts, &d.ResponseCode, &d.LastError, &d.CreatedAt, &d.NextAttempt, &delivered, &d.URL, &d.Secret, &d.Project, &d.Deployment)
		if err != nil {
			return nil, fmt.Errorf("read webhook deliveries: %w", err)
		}

		d.Body = []byte(body)
		if delivered.Valid {
			d.DeliveredAt = &delivered.Time
		}

		deliveries = append(deliveries, d)
	}

	return deliveries, rows.Err()
}

// ClaimDueDeliveries leases up to limit pending deliveries that are due to owner until
// now+lease. The claim is one transaction, so two daemons never send the same delivery
// at once; a daemon that dies mid-send lets its lease lapse and another takes over.
func ClaimDueDeliveries(ctx context.Context, tx *sql.Tx, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT `+deliveryColumns+`
  FROM webhook_deliveries w JOIN deployments d ON d.id = w.deployment_id
 WHERE w.status = 'pending' AND w.next_attempt_at <= ? AND (w.claimed_until IS NULL OR w.claimed_until < ?)
 ORDER BY w.next_attempt_at, w.id
 LIMIT ?`, now.UTC(), now.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("read due webhook deliveries: %w", err)
	}

	deliveries, err := scanDeliveries(rows)
	if err != nil {
		return nil, err
	}

	configs, err := getConfigs(ctx, tx, deploymentsConfig)
	if err != nil {
		return nil, err
	}

	for i := range deliveries {
		deliveries[i].Config = configs[deliveries[i].DeploymentID]
		_, err = tx.ExecContext(ctx, "UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ? WHERE id = ?", owner, now.Add(lease).UTC(), deliveries[i].ID)
		if err != nil {
			return nil, fmt.Errorf("claim webhook delivery: %w", err)
		}
	}

	return deliveries, nil
}

// NextDeliveryDue returns when the next pending delivery is due (zero time if none).
func NextDeliveryDue(ctx context.Context, tx *sql.Tx) (time.Time, error) {
	var next time.Time
	err := tx.QueryRowContext(ctx, "SELECT next_attempt_at FROM webhook_deliveries WHERE status = 'pending' ORDER BY next_attempt_at LIMIT 1").Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}

	return next, err
}

// DeliveryAttempt is the outcome of one attempt.
type DeliveryAttempt struct {
	Status       string
	ResponseCode int
	Error        string
	NextAttempt  time.Time
	At           time.Time
}

// ReleaseDeliveryClaims drops the claims an owner holds (after its restart).
func ReleaseDeliveryClaims(ctx context.Context, tx *sql.Tx, owner string) error {
	_, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET claimed_by = '', claimed_until = NULL WHERE claimed_by = ? AND status = 'pending'", owner)
	return err
}

// RecordDeliveryAttempt stores an attempt's outcome and releases the claim, if owner still
// holds it (a lapsed lease may have passed the delivery to another daemon).
func RecordDeliveryAttempt(ctx context.Context, tx *sql.Tx, id int64, owner string, attempt DeliveryAttempt) error {
	var delivered any
	if attempt.Status == DeliveryDelivered {
		delivered = attempt.At.UTC()
	}

	_, err := tx.ExecContext(ctx, `
UPDATE webhook_deliveries
   SET status = ?, attempts = attempts + 1, last_response_code = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?, claimed_by = '', claimed_until = NULL
 WHERE id = ? AND claimed_by = ?`, attempt.Status, attempt.ResponseCode, attempt.Error, attempt.NextAttempt.UTC(), delivered, id, owner)
	if err != nil {
		return fmt.Errorf("record webhook attempt: %w", err)
	}

	return nil
}

// GetDeliveries returns a deployment's most recent deliveries, newest first.
func GetDeliveries(ctx context.Context, tx *sql.Tx, deploymentID int64, limit int) ([]Delivery, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT `+deliveryColumns+`
  FROM webhook_deliveries w JOIN deployments d ON d.id = w.deployment_id
 WHERE w.deployment_id = ?
 ORDER BY w.id DESC
 LIMIT ?`, deploymentID, limit)
	if err != nil {
		return nil, fmt.Errorf("read webhook deliveries: %w", err)
	}

	return scanDeliveries(rows)
}

// GetDelivery returns one delivery of a deployment, or a 404.
func GetDelivery(ctx context.Context, tx *sql.Tx, deploymentID int64, uuid string) (*Delivery, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT `+deliveryColumns+`
  FROM webhook_deliveries w JOIN deployments d ON d.id = w.deployment_id
 WHERE w.deployment_id = ? AND w.uuid = ?`, deploymentID, uuid)
	if err != nil {
		return nil, fmt.Errorf("read webhook delivery: %w", err)
	}

	deliveries, err := scanDeliveries(rows)
	if err != nil {
		return nil, err
	}

	if len(deliveries) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "webhook delivery %q not found in the deployment", uuid)
	}

	return &deliveries[0], nil
}

// RedeliverDelivery queues a delivery again, with a fresh attempt budget.
func RedeliverDelivery(ctx context.Context, tx *sql.Tx, id int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, claimed_by = '', claimed_until = NULL WHERE id = ?", now.UTC(), id)
	if err != nil {
		return fmt.Errorf("redeliver webhook: %w", err)
	}

	return nil
}

// PurgeDeliveries drops finished deliveries older than the cutoff.
func PurgeDeliveries(ctx context.Context, tx *sql.Tx, before time.Time) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE status != 'pending' AND created_at < ?", before.UTC())
	return err
}

// GetWebhookSecret returns a deployment's webhook signing secret.
func GetWebhookSecret(ctx context.Context, tx *sql.Tx, deploymentID int64) (string, error) {
	var secret string
	err := tx.QueryRowContext(ctx, "SELECT webhook_secret FROM deployments WHERE id = ?", deploymentID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", lxdapi.StatusErrorf(http.StatusNotFound, "deployment not found")
	}

	return secret, err
}

// SetWebhookSecret replaces a deployment's webhook signing secret.
func SetWebhookSecret(ctx context.Context, tx *sql.Tx, deploymentID int64, secret string) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments SET webhook_secret = ? WHERE id = ?", secret, deploymentID)
	return err
}
