package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
	"github.com/lxd-deployd/lxd-deployd/shared/webhook"
)

// maxWebhookBody bounds a delivery: a metrics event of a few thousand instances fits.
const maxWebhookBody = 4 << 20

// seenTTL is how long event ids are remembered to acknowledge redeliveries without acting
// twice: well past the signature window, so a redelivery of a signed body cannot slip by.
const seenTTL = time.Hour

// webhookReceiver is the webhook endpoint of the governor: it checks each delivery, answers at
// once and hands the work to the shape workers.
type webhookReceiver struct {
	secret     string
	project    string
	deployment string

	now     func() time.Time
	log     *slog.Logger
	seen    *idCache
	enqueue func(shape string, j governorJob)
}

func newReceiver(secret string, project string, deployment string, g *governor, log *slog.Logger) *webhookReceiver {
	return &webhookReceiver{
		secret:     secret,
		project:    governorProject(project),
		deployment: deployment,
		now:        time.Now,
		log:        log,
		seen:       newIDCache(seenTTL),
		enqueue:    g.enqueue,
	}
}

func governorProject(project string) string {
	if project == "" {
		return api.DefaultProject
	}

	return project
}

// ServeHTTP takes a delivery on any path: the deployment's governor_webhook_url may name one.
func (rc *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhook deliveries are POSTed", http.StatusMethodNotAllowed)
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rc.log.Warn("webhook rejected", "remote", r.RemoteAddr, "err", "body over the size limit")
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}

		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}

	err = webhook.Verify(rc.secret, body, r.Header.Get(webhook.SignatureHeader), rc.now())
	if err != nil {
		rc.log.Warn("webhook rejected", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}

	var event api.WebhookEvent
	err = json.Unmarshal(body, &event)
	if err == nil && event.ID == "" {
		err = errors.New("the event has no id")
	}

	if err != nil {
		rc.log.Warn("webhook rejected", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}

	log := rc.log.With("event", event.ID, "type", event.Type)
	if event.Deployment != rc.deployment || governorProject(event.Project) != rc.project {
		err := fmt.Errorf("event for deployment %s of project %s, but this governor serves deployment %s of project %s: check --deployment and --project", event.Deployment, governorProject(event.Project), rc.deployment, rc.project)
		log.Warn("webhook rejected", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	// Parse before remembering the id: a delivery refused here is acted on when it comes
	// again fixed, not acknowledged as a duplicate.
	jobs, err := rc.jobs(log, event)
	if err != nil {
		log.Warn("webhook rejected", "err", err)
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}

	if !rc.seen.add(event.ID, rc.now()) {
		log.Info("duplicate event acknowledged, not acted on again")
		webhookReply(w, http.StatusOK, "duplicate")
		return
	}

	for _, j := range jobs {
		rc.enqueue(j.shape, j)
	}

	webhookReply(w, http.StatusAccepted, "accepted")
}

func webhookReply(w http.ResponseWriter, status int, what string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "{\"status\":%q}\n", what)
}

// jobs turns an event into work for the shape workers; events that need no work are logged.
func (rc *webhookReceiver) jobs(log *slog.Logger, event api.WebhookEvent) ([]governorJob, error) {
	switch event.Type {
	case api.WebhookScaleRequest:
		var request api.WebhookScaleRequestMetadata
		err := json.Unmarshal(event.Metadata, &request)
		if err != nil {
			return nil, fmt.Errorf("scale-request metadata: %w", err)
		}

		err = validate.Name("shape", request.Shape)
		if err != nil {
			return nil, err
		}

		return []governorJob{{event: event.ID, shape: request.Shape, kind: policy.ScaleRequest, request: request}}, nil
	case api.WebhookMetrics:
		var metrics api.WebhookMetricsMetadata
		err := json.Unmarshal(event.Metadata, &metrics)
		if err != nil {
			return nil, fmt.Errorf("metrics metadata: %w", err)
		}

		shapes := make([]string, 0, len(metrics.Shapes))
		for shape := range metrics.Shapes {
			err = validate.Name("shape", shape)
			if err != nil {
				return nil, err
			}

			shapes = append(shapes, shape)
		}

		sort.Strings(shapes)
		jobs := make([]governorJob, 0, len(shapes))
		for _, shape := range shapes {
			jobs = append(jobs, governorJob{event: event.ID, shape: shape, kind: policy.Metrics, metrics: metrics.Shapes[shape]})
		}

		return jobs, nil
	case api.WebhookLifecycle:
		var lifecycle api.WebhookLifecycleMetadata
		err := json.Unmarshal(event.Metadata, &lifecycle)
		if err != nil {
			return nil, fmt.Errorf("lifecycle metadata: %w", err)
		}

		log.Info("lifecycle", "action", lifecycle.Action, "shape", lifecycle.Shape, "instance", lifecycle.Instance)
		return nil, nil
	case api.WebhookPing:
		log.Info("ping")
		return nil, nil
	}

	// Newer daemons may send more types: acknowledge them rather than have them retried.
	log.Warn("event type unknown to this governor, ignored")
	return nil, nil
}

// idCache remembers event ids for a while.
type idCache struct {
	mu        sync.Mutex
	ttl       time.Duration
	seen      map[string]time.Time
	lastPrune time.Time
}

func newIDCache(ttl time.Duration) *idCache {
	return &idCache{ttl: ttl, seen: map[string]time.Time{}}
}

// add records id as seen at now; false if it was already seen within the TTL.
func (c *idCache) add(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()

	if now.Sub(c.lastPrune) > c.ttl/10 {
		for seenID, at := range c.seen {
			if now.Sub(at) >= c.ttl {
				delete(c.seen, seenID)
			}
		}

		c.lastPrune = now
	}

	at, ok := c.seen[id]
	if ok && now.Sub(at) < c.ttl {
		return false
	}

	c.seen[id] = now
	return true
}
