package test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/webhook"
)

// receiver is a governor's webhook endpoint for tests: it verifies signatures, can fail on
// purpose, and keeps each event once by id, as a governor dedupes.
type receiver struct {
	t      testing.TB
	server *httptest.Server

	mu       sync.Mutex
	secret   string
	failNext int
	attempts int
	rejected int
	events   map[string]api.WebhookEvent
	order    []string
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, events: map[string]api.WebhookEvent{}}
	r.server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.server.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	if webhook.Verify(r.secret, body, req.Header.Get(webhook.SignatureHeader), time.Now()) != nil {
		r.rejected++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}

	if r.failNext > 0 {
		r.failNext--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}

	var event api.WebhookEvent
	if json.Unmarshal(body, &event) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}

	if _, seen := r.events[event.ID]; !seen {
		r.events[event.ID] = event
		r.order = append(r.order, event.ID)
	}

	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) set(secret string, failNext int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret, r.failNext = secret, failNext
}

// waitFor waits until an event matching match has arrived, and returns it.
func (r *receiver) waitFor(what string, timeout time.Duration, match func(api.WebhookEvent) bool) api.WebhookEvent {
	r.t.Helper()
	var event api.WebhookEvent
	waitUntil(r.t, "a "+what+" event", timeout, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, id := range r.order {
			if match(r.events[id]) {
				event = r.events[id]
				return true
			}
		}

		return false
	}, every(50*time.Millisecond))
	return event
}

func byID(id string) func(api.WebhookEvent) bool {
	return func(e api.WebhookEvent) bool { return e.ID == id }
}

// lifecycleEvent matches a lifecycle webhook event by action (and instance when given).
func lifecycleEvent(action string, instance string) func(api.WebhookEvent) bool {
	return func(e api.WebhookEvent) bool {
		var m api.WebhookLifecycleMetadata
		if e.Type != api.WebhookLifecycle || json.Unmarshal(e.Metadata, &m) != nil {
			return false
		}

		return m.Action == action && (instance == "" || m.Instance == instance)
	}
}

// actionLog collects lifecycle actions heard from several goroutines.
type actionLog struct {
	mu      sync.Mutex
	actions []string
}

func (l *actionLog) add(action string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.actions = append(l.actions, action)
}

func (l *actionLog) has(action string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.actions, action)
}

func (l *actionLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.actions...)
}
