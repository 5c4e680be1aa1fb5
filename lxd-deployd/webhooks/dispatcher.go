package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/webhook"
)

const (
	// maxResponse caps what is read of a webhook's answer.
	maxResponse = 64 << 10

	// parallel bounds the deliveries in flight from one daemon.
	parallel = 8

	// retention is how long finished deliveries stay listed.
	retention = 7 * 24 * time.Hour
)

// Dispatcher queues events and delivers them.
type Dispatcher struct {
	db     *db.Cluster
	owner  string
	logger *slog.Logger
	client *http.Client
	wake   chan struct{}

	// slots holds one token per delivery in flight: a slow webhook occupies one slot, and
	// the others keep flowing.
	slots chan struct{}
	wg    sync.WaitGroup

	// attempts hears of every attempt (nil: not counted).
	attempts Attempts
}

// Attempts hears of every delivery attempt: the daemon's metrics.
type Attempts interface {
	WebhookAttempt(project string, deployment string, took time.Duration, err error)
}

// DispatcherConfig is what a dispatcher is built from.
type DispatcherConfig struct {
	DB *db.Cluster

	// Owner names this daemon in delivery claims.
	Owner  string
	Logger *slog.Logger

	// Policy says where deliveries may connect (the zero policy: the default one).
	Policy DestinationPolicy

	// Attempts, when set, hears of every attempt.
	Attempts Attempts
}

// NewDispatcher returns a dispatcher.
func NewDispatcher(c DispatcherConfig) *Dispatcher {
	return &Dispatcher{
		db:     c.DB,
		owner:  c.Owner,
		logger: c.Logger,
		// Per-delivery timeouts come from the deployment's config, through the context.
		client:   c.Policy.Client(),
		attempts: c.Attempts,
		wake:     make(chan struct{}, 1),
		slots:    make(chan struct{}, parallel),
	}
}

// NewID returns a random event id.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", id[0:8], id[8:12], id[12:16], id[16:20], id[20:32])
}

// Enqueue stores an event for a deployment in the caller's transaction; nothing is queued
// when the deployment has no webhook URL. Call Poke after the transaction commits.
func Enqueue(ctx context.Context, tx *sql.Tx, deploymentID int64, eventType string, metadata any, now time.Time) (string, error) {
	deployments, err := db.GetDeploymentRow(ctx, tx, deploymentID)
	if err != nil || deployments.GovernorWebhookURL == "" {
		return "", err
	}

	encoded, err := json.Marshal(metadata)
	if err != nil {
		return "", err
	}

	event := api.WebhookEvent{
		ID:         NewID(),
		Timestamp:  now.UTC(),
		Project:    deployments.Project,
		Deployment: deployments.Name,
		Type:       eventType,
		Metadata:   encoded,
	}

	body, err := json.Marshal(event)
	if err != nil {
		return "", err
	}

	return event.ID, db.EnqueueDelivery(ctx, tx, deploymentID, event.ID, eventType, body, now)
}

// Emit queues an event in its own transaction and wakes the sender.
func (d *Dispatcher) Emit(ctx context.Context, deploymentID int64, eventType string, metadata any) {
	err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := Enqueue(ctx, tx, deploymentID, eventType, metadata, time.Now())
		return err
	})
	if err != nil {
		d.logger.Warn("queue webhook event", "type", eventType, "err", err)
		return
	}

	d.Poke()
}

// Poke wakes the sender to look for due deliveries now.
func (d *Dispatcher) Poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends. Claims this daemon held before a restart are
// released first: their sends died with the old process.
func (d *Dispatcher) Run(ctx context.Context) {
	defer d.wg.Wait()
	err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.ReleaseDeliveryClaims(ctx, tx, d.owner)
	})
	if err != nil {
		d.logger.Warn("release webhook claims", "err", err)
	}

	lastPurge := time.Time{}
	for {
		if time.Since(lastPurge) > time.Hour {
			lastPurge = time.Now()
			_ = d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
				return db.PurgeDeliveries(ctx, tx, time.Now().Add(-retention))
			})
		}

		sent, next := d.sendDue(ctx)
		wait := time.Second
		if sent > 0 {
			wait = 0
		} else if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}

		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-time.After(wait):
		}
	}
}

// sendDue claims as many due deliveries as there are free slots and sends each in the
// background; it returns how many it started and, when none was due, when the next one is
// (zero: none waits). One transaction for both: an idle daemon runs this every second.
func (d *Dispatcher) sendDue(ctx context.Context) (int, time.Time) {
	free := cap(d.slots) - len(d.slots)
	if free == 0 {
		return 0, time.Time{}
	}

	var due []db.Delivery
	var next time.Time
	err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		// The lease outlasts the longest timeout a deployment may set (one minute).
		due, err = db.ClaimDueDeliveries(ctx, tx, d.owner, time.Now(), 10*time.Minute, free)
		if err != nil || len(due) > 0 {
			return err
		}

		next, err = db.NextDeliveryDue(ctx, tx)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("claim webhook deliveries", "err", err)
		}

		return 0, time.Time{}
	}

	for _, delivery := range due {
		d.slots <- struct{}{}
		d.wg.Add(1)
		go func(delivery db.Delivery) {
			defer d.wg.Done()
			defer func() {
				<-d.slots
				d.Poke()
			}()

			attempt := d.attempt(ctx, delivery)
			err := d.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
				return db.RecordDeliveryAttempt(ctx, tx, delivery.ID, d.owner, attempt)
			})
			if err != nil {
				d.logger.Warn("record webhook attempt", "delivery", delivery.UUID, "err", err)
			}
		}(delivery)
	}

	return len(due), next
}

// attempt sends one delivery and says what to record.
func (d *Dispatcher) attempt(ctx context.Context, delivery db.Delivery) db.DeliveryAttempt {
	cfg := ConfigFrom(delivery.Config)
	now := time.Now()
	code, err := d.post(ctx, delivery, cfg.Timeout)
	if d.attempts != nil {
		d.attempts.WebhookAttempt(delivery.Project, delivery.Deployment, time.Since(now), err)
	}

	result := db.DeliveryAttempt{ResponseCode: code, At: now, NextAttempt: now}
	switch {
	case err == nil:
		result.Status = db.DeliveryDelivered
		d.logger.Debug("webhook delivered", "delivery", delivery.UUID, "type", delivery.Type, "code", code)
		return result
	case delivery.Attempts+1 >= cfg.MaxAttempts, delivery.Type == api.WebhookMetrics:
		// Metrics are not retried: the next round brings fresher ones.
		result.Status = db.DeliveryFailed
	default:
		result.Status = db.DeliveryPending
		result.NextAttempt = now.Add(Backoff(delivery.Attempts+1, cfg.InitialDelay, cfg.MaxDelay))
	}

	result.Error = err.Error()
	d.logger.Info("webhook attempt failed", "delivery", delivery.UUID, "type", delivery.Type, "attempt", delivery.Attempts+1, "code", code, "err", err, "status", result.Status)
	return result
}

// post sends the signed body; only a 2xx answer counts as delivered.
func (d *Dispatcher) post(ctx context.Context, delivery db.Delivery, timeout time.Duration) (int, error) {
	if delivery.URL == "" {
		return 0, errors.New("the deployment no longer has a governor_webhook_url")
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, delivery.URL, bytes.NewReader(delivery.Body))
	if err != nil {
		return 0, redactError(err)
	}

	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lxd-deployd")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(delivery.Secret, delivery.Body, time.Now()))
	req.Header.Set("X-LXD-Deployd-Event", delivery.Type)
	req.Header.Set("X-LXD-Deployd-Delivery", delivery.UUID)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, redactError(err)
	}

	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("webhook answered HTTP %d", resp.StatusCode)
	}

	return resp.StatusCode, nil
}
