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

// TestMemberStreamCarriesOwnEventsOnly: another member relaying this one's events gets
// them with their deployment, but never the events this member relayed from others, so
// nothing loops between members; local listeners get both, each with its location.
func TestMemberStreamCarriesOwnEventsOnly(t *testing.T) {
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)), "m1")
	defer s.Close()
	dial := func(handler http.HandlerFunc) *websocket.Conn {
		server := httptest.NewServer(handler)
		t.Cleanup(server.Close)
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(server.URL, "http"), nil)
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}

	member := dial(func(w http.ResponseWriter, r *http.Request) { _ = s.ServeMember(w, r) })
	local := dial(func(w http.ResponseWriter, r *http.Request) {
		_ = s.Serve(w, r, "test", nil, "", func(int64) bool { return true })
	})

	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.RLock()
		n := len(s.listeners)
		s.mu.RUnlock()
		if n == 2 {
			break
		}

		if time.Now().After(deadline) {
			t.Fatal("listeners did not connect")
		}

		time.Sleep(time.Millisecond)
	}

	s.Relay(Event{Event: lxdapi.Event{Type: lxdapi.EventTypeLifecycle, Location: "m2", Project: "default", Metadata: []byte(`{"from":"m2"}`)}, DeploymentID: 7})
	s.Lifecycle("default", 3, "deployment-created", "/1.0/deployments/dep3", nil, nil)

	var own Event
	_ = member.SetReadDeadline(time.Now().Add(5 * time.Second))
	err := member.ReadJSON(&own)
	if err != nil || own.Location != "m1" || own.DeploymentID != 3 || !strings.Contains(string(own.Metadata), "dep3") {
		t.Fatalf("the member stream must carry this member's own event with its deployment first: %+v %v", own, err)
	}

	locations := []string{}
	for len(locations) < 2 {
		var event lxdapi.Event
		_ = local.SetReadDeadline(time.Now().Add(5 * time.Second))
		err = local.ReadJSON(&event)
		if err != nil {
			t.Fatal(err)
		}

		locations = append(locations, event.Location)
	}

	if strings.Join(locations, ",") != "m2,m1" {
		t.Fatalf("local listeners get relayed and own events with their locations: %v", locations)
	}
}
