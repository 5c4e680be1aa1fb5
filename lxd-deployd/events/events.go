// Package events is the /1.0/events stream in LXD's format: operation updates and lifecycle
// events, each scoped to the deployment it concerns so that a governor only sees its own.
package events

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// Event is an LXD event plus the deployment it concerns (0: server-wide, admins only).
type Event struct {
	lxdapi.Event
	DeploymentID int64 `json:"deployment_id"`
}

// Filter decides whether a listener may see events of a deployment.
type Filter func(deploymentID int64) bool

// Server fans events out to the connected listeners.
type Server struct {
	logger   *slog.Logger
	location string

	mu        sync.RWMutex
	listeners map[*listener]struct{}
	perCaller map[string]int // open streams by caller, for MaxListenersPerCaller

	// done ends every stream on shutdown: hijacked websockets outlive http.Server.Shutdown.
	done      chan struct{}
	closeOnce sync.Once
}

// Close ends every event stream.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// NewServer returns an event server; location names this daemon in events.
func NewServer(logger *slog.Logger, location string) *Server {
	return &Server{logger: logger, location: location, listeners: map[*listener]struct{}{}, perCaller: map[string]int{}, done: make(chan struct{})}
}

type listener struct {
	types   map[string]bool
	project string // empty: every project
	allowed Filter
	queue   chan Event

	// member is another member of the cluster relaying this member's own events: it gets
	// no relayed event back, so events never loop between members.
	member bool
}

// Send delivers an event to every listener that wants its type and may see it. A listener
// too slow to keep up loses events rather than slowing the API down.
func (s *Server) Send(eventType string, project string, deploymentID int64, metadata any) {
	encoded, err := json.Marshal(metadata)
	if err != nil {
		s.logger.Error("encode event", "type", eventType, "err", err)
		return
	}

	event := Event{
		Event: lxdapi.Event{
			Type:      eventType,
			Timestamp: time.Now().UTC(),
			Metadata:  encoded,
			Location:  s.location,
			Project:   project,
		},
		DeploymentID: deploymentID,
	}

	s.deliver(event, false)
}

// Relay delivers an event another member sent (its Location names that member) to this
// member's listeners, except the members relaying from here.
func (s *Server) Relay(event Event) {
	s.deliver(event, true)
}

func (s *Server) deliver(event Event, relayed bool) {
	eventType, project := event.Type, event.Project
	s.mu.RLock()
	defer s.mu.RUnlock()
	for l := range s.listeners {
		if (relayed && l.member) || !l.types[eventType] || (l.project != "" && project != "" && l.project != project) {
			continue
		}

		select {
		case l.queue <- event:
		default:
			s.logger.Warn("event listener too slow: event dropped", "type", eventType)
		}
	}
}

// Wants reports whether any listener streams events of the type, so that a sender can
// skip building an event nobody would get (the logging events of every log line).
func (s *Server) Wants(eventType string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for l := range s.listeners {
		if l.types[eventType] {
			return true
		}
	}

	return false
}

// Lifecycle sends a lifecycle event such as "deployment-created" for the object at source.
func (s *Server) Lifecycle(project string, deploymentID int64, action string, source string, context map[string]any, requestor *lxdapi.EventLifecycleRequestor) {
	s.Send(lxdapi.EventTypeLifecycle, project, deploymentID, lxdapi.EventLifecycle{
		Action:    action,
		Source:    source,
		Context:   context,
		Requestor: requestor,
		Project:   project,
	})
}

// Limits of the event streams.
const (
	// MaxClientMessage is the largest frame a client may send: clients only send control
	// frames (close, pong), so anything larger is refused before it is buffered.
	MaxClientMessage = 4096

	// MaxListenersPerCaller caps the streams one caller (one certificate, one governor,
	// the unix socket) may hold open at once.
	MaxListenersPerCaller = 32
)

// Subprotocol is the websocket subprotocol the daemon answers to a client offering it.
const Subprotocol = "lxd-deployd"

var upgrader = websocket.Upgrader{
	// A browser holding a client certificate sends it to any site's websocket: refuse an
	// upgrade whose Origin is another host (gorilla's same-origin check), as LXD does.
	// Clients that are not browsers send no Origin and pass.
	CheckOrigin: nil,

	// The web view's page offers Subprotocol beside the one carrying its session's
	// binding (auth.BindingProtocolPrefix): a browser drops a websocket whose answer
	// names none of the protocols it offered, and the binding is never echoed back.
	Subprotocols: []string{Subprotocol},

	// Refusals answer in the LXD envelope, like every other error.
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		_ = response.ErrorResponse(status, reason.Error()).Render(w)
	},
}

// Serve upgrades the request to a websocket and streams the events of the given types
// (every type when empty) that allowed lets through, until the client goes away. caller
// names who is asking, for MaxListenersPerCaller.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, caller string, types []string, project string, allowed Filter) error {
	s.mu.Lock()
	if s.perCaller[caller] >= MaxListenersPerCaller {
		s.mu.Unlock()
		return response.ErrorResponse(http.StatusTooManyRequests, fmt.Sprintf("too many event streams open (%d) for this caller: close some first", MaxListenersPerCaller)).Render(w)
	}

	s.perCaller[caller]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.perCaller[caller]--
		if s.perCaller[caller] <= 0 {
			delete(s.perCaller, caller)
		}

		s.mu.Unlock()
	}()

	l := &listener{types: map[string]bool{}, project: project, allowed: allowed, queue: make(chan Event, 1024)}
	if len(types) == 0 {
		types = []string{lxdapi.EventTypeOperation, lxdapi.EventTypeLifecycle}
	}

	for _, t := range types {
		l.types[t] = true
	}

	return s.serve(w, r, l, func(e Event) any { return e.Event })
}

// ServeMember streams this member's own events, every type and project, with the
// deployment each concerns, to another member that relays them to its listeners.
func (s *Server) ServeMember(w http.ResponseWriter, r *http.Request) error {
	l := &listener{
		types:   map[string]bool{lxdapi.EventTypeOperation: true, lxdapi.EventTypeLifecycle: true},
		allowed: func(int64) bool { return true },
		queue:   make(chan Event, 1024),
		member:  true,
	}

	return s.serve(w, r, l, func(e Event) any { return e })
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, l *listener, encode func(Event) any) error {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil // Upgrade answered already.
	}

	defer func() { _ = conn.Close() }()
	conn.SetReadLimit(MaxClientMessage)

	s.mu.Lock()
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()

	// Reading is how a closed connection is noticed.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			_, _, err := conn.ReadMessage()
			if err != nil {
				return
			}
		}
	}()

	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-closed:
			return nil
		case <-s.done:
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
			return nil
		case <-ping.C:
			err = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second))
			if err != nil {
				return nil
			}

		case event := <-l.queue:
			if !l.allowed(event.DeploymentID) {
				continue
			}

			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			err = conn.WriteJSON(encode(event))
			if err != nil {
				return nil
			}
		}
	}
}

// hasListeners reports whether any stream is connected (tests wait on it).
func (s *Server) hasListeners() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.listeners) > 0
}
