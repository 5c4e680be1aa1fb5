package events

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"
)

func TestStreamFiltersByTypeProjectAndDeployment(t *testing.T) {
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)), "host1")
	defer s.Close()

	// The listener may see deployment 1 only, lifecycle events only, in project default.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = s.Serve(w, r, "test", []string{lxdapi.EventTypeLifecycle}, "default", func(id int64) bool { return id == 1 })
	}))
	defer server.Close()

	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(server.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = conn.Close() }()
	for !s.hasListeners() {
		time.Sleep(time.Millisecond)
	}

	s.Send(lxdapi.EventTypeOperation, "default", 1, map[string]string{"skip": "type"})
	s.Lifecycle("default", 2, "deployment-created", "/1.0/deployments/other", nil, nil)
	s.Lifecycle("p2", 1, "deployment-created", "/1.0/deployments/p2dep", nil, nil)
	s.Lifecycle("default", 1, "deployment-created", "/1.0/deployments/dep1", nil, nil)

	var event lxdapi.Event
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	err = conn.ReadJSON(&event)
	if err != nil {
		t.Fatal(err)
	}

	if event.Type != lxdapi.EventTypeLifecycle || !strings.Contains(string(event.Metadata), "/1.0/deployments/dep1") || event.Location != "host1" {
		t.Fatalf("the first event through must be dep1's lifecycle event, got %+v %s", event, event.Metadata)
	}
}
