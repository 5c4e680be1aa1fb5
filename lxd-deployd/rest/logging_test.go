package rest

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
)

// Log lines reach logging event listeners with their attributes (groups prefixed), and
// the base handler's level still decides what is logged.
func TestLoggingEvents(t *testing.T) {
	base := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	server := events.NewServer(base, "test")
	t.Cleanup(server.Close)
	httpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = server.Serve(w, r, "test", []string{lxdapi.EventTypeLogging}, "", func(int64) bool { return true })
	}))
	t.Cleanup(httpServer.Close)

	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(httpServer.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = conn.Close() }()
	for deadline := time.Now().Add(5 * time.Second); !server.Wants(lxdapi.EventTypeLogging); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not register")
		}
	}

	logger := WithLoggingEvents(base, server).With("request_id", "r1").WithGroup("op")
	logger.Debug("not logged at info level")
	logger.Info("hello", "id", "o1")

	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var event lxdapi.Event
	err = conn.ReadJSON(&event)
	if err != nil {
		t.Fatal(err)
	}

	var logged lxdapi.EventLogging
	err = json.Unmarshal(event.Metadata, &logged)
	if err != nil {
		t.Fatal(err)
	}

	if logged.Message != "hello" || logged.Level != "info" || logged.Context["request_id"] != "r1" || logged.Context["op.id"] != "o1" {
		t.Fatalf("logging event: %+v", logged)
	}
}
