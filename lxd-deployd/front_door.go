package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/haproxy"
)

// Front door modes (--front-door, doc/traffic.md).
const (
	// frontDoorNone drives no load balancer: endpoints are served on the API and
	// /1.0/events for one of the operator's to follow, and a drain lasts its timeout.
	frontDoorNone = "none"
	// frontDoorPrivate runs and supervises a private HAProxy of the daemon's own, in
	// <data-dir>/frontdoor (the default).
	frontDoorPrivate = "private"
	// frontDoorHAProxy drives an operator's HAProxy through its admin socket
	// (--haproxy-socket).
	frontDoorHAProxy = "haproxy"
)

// doorInterval is how often the doorkeeper looks at the endpoints when nothing pokes it:
// a delete pokes it, health verdicts and LXD's addresses are picked up within this.
const doorInterval = time.Second

// openFrontDoor returns the door the configuration names, nil for none. A door is opened
// (a private HAProxy started or adopted, an operator's socket checked) at the first
// picture that names a shape, not at start: a daemon none of whose shapes has traffic runs
// no HAProxy and needs none installed.
func openFrontDoor(c config, logger *slog.Logger) (frontdoor.Door, error) {
	switch c.frontDoor {
	case "", frontDoorNone:
		return nil, nil
	case frontDoorPrivate:
		dir := filepath.Join(c.dataDir, "frontdoor")
		return &lazyDoor{open: func(ctx context.Context) (frontdoor.Door, error) {
			return haproxy.NewPrivate(ctx, haproxy.PrivateConfig{Dir: dir, Logger: logger})
		}}, nil
	case frontDoorHAProxy:
		if c.haproxySocket == "" {
			return nil, fmt.Errorf("--front-door haproxy needs the admin socket of the operator's HAProxy: set --haproxy-socket")
		}

		return &lazyDoor{open: func(ctx context.Context) (frontdoor.Door, error) {
			return haproxy.NewOperator(ctx, c.haproxySocket, logger)
		}}, nil
	default:
		return nil, fmt.Errorf("--front-door %q is not a mode: use private, haproxy or none", c.frontDoor)
	}
}

// lazyDoor opens its door at the first Apply that names a frontend.
type lazyDoor struct {
	open func(ctx context.Context) (frontdoor.Door, error)

	mu   sync.Mutex
	door frontdoor.Door
}

// opened returns the door, opening it when want says a frontend needs it (nil otherwise).
func (l *lazyDoor) opened(ctx context.Context, want bool) (frontdoor.Door, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.door == nil && want {
		door, err := l.open(ctx)
		if err != nil {
			return nil, fmt.Errorf("open the front door: %w", err)
		}

		l.door = door
	}

	return l.door, nil
}

// Apply implements frontdoor.Door.
func (l *lazyDoor) Apply(ctx context.Context, frontends []frontdoor.Frontend) error {
	door, err := l.opened(ctx, len(frontends) > 0)
	if err != nil || door == nil {
		return err
	}

	return door.Apply(ctx, frontends)
}

// Stats implements frontdoor.Door.
func (l *lazyDoor) Stats(ctx context.Context) (map[string]frontdoor.FrontendStats, error) {
	door, err := l.opened(ctx, false)
	if err != nil || door == nil {
		return map[string]frontdoor.FrontendStats{}, err
	}

	return door.Stats(ctx)
}

// Follow implements frontdoor.Follower for a door that does (an operator's HAProxy,
// which another member may drive).
func (l *lazyDoor) Follow(ctx context.Context, frontends []frontdoor.Frontend) error {
	door, err := l.opened(ctx, len(frontends) > 0)
	if err != nil || door == nil {
		return err
	}

	if follower, ok := door.(frontdoor.Follower); ok {
		return follower.Follow(ctx, frontends)
	}

	return nil
}

// Close implements frontdoor.Door: the load balancer runs on (a restarted daemon adopts it).
func (l *lazyDoor) Close() error {
	door, _ := l.opened(context.Background(), false)
	if door == nil {
		return nil
	}

	return door.Close()
}
