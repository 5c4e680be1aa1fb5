package events

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func newLimitServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)), "host1")
	t.Cleanup(s.Close)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = s.Serve(w, r, r.Header.Get("X-Caller"), nil, "", func(int64) bool { return true })
	}))
	t.Cleanup(server.Close)
	return s, "ws" + strings.TrimPrefix(server.URL, "http")
}

// TestLargeClientFrameClosesTheStream: a client frame over MaxClientMessage ends the
// stream at once; the server never buffers it.
func TestLargeClientFrameClosesTheStream(t *testing.T) {
	s, url := newLimitServer(t)
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = conn.Close() }()
	for !s.hasListeners() {
		time.Sleep(time.Millisecond)
	}

	// A small frame is fine; a 1 MiB one is refused.
	_ = conn.WriteMessage(websocket.TextMessage, []byte("hi"))
	_ = conn.WriteMessage(websocket.BinaryMessage, make([]byte, 1<<20))
	deadline := time.Now().Add(5 * time.Second)
	for s.hasListeners() {
		if time.Now().After(deadline) {
			t.Fatal("the stream survived a 1 MiB client frame")
		}

		time.Sleep(5 * time.Millisecond)
	}

	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = conn.ReadMessage()
	if err == nil {
		t.Fatal("the connection is still open")
	}
}

func TestCrossOriginUpgradeRefused(t *testing.T) {
	_, url := newLimitServer(t)
	host := strings.TrimPrefix(url, "ws://")
	for origin, ok := range map[string]bool{"": true, "http://" + host: true, "https://evil.example": false, "http://127.0.0.2:1": false} {
		header := http.Header{}
		if origin != "" {
			header.Set("Origin", origin)
		}

		conn, resp, err := websocket.DefaultDialer.Dial(url, header)
		if ok {
			if err != nil {
				t.Fatalf("origin %q refused: %v", origin, err)
			}

			_ = conn.Close()
			continue
		}

		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("origin %q: want a 403, got %v", origin, err)
		}

		var envelope map[string]any
		err = json.NewDecoder(resp.Body).Decode(&envelope)
		if err != nil || envelope["error_code"] != float64(403) {
			t.Fatalf("origin %q: refusal is not in the envelope: %v %v", origin, envelope, err)
		}
	}
}

func TestListenersPerCallerCapped(t *testing.T) {
	_, url := newLimitServer(t)
	header := http.Header{"X-Caller": []string{"gov"}}
	for i := 0; i < MaxListenersPerCaller; i++ {
		conn, _, err := websocket.DefaultDialer.Dial(url, header)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}

		defer func() { _ = conn.Close() }()
	}

	_, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream %d was accepted: %v", MaxListenersPerCaller+1, err)
	}

	// Another caller is not affected.
	conn, _, err := websocket.DefaultDialer.Dial(url, http.Header{"X-Caller": []string{"other"}})
	if err != nil {
		t.Fatal(err)
	}

	_ = conn.Close()
}
