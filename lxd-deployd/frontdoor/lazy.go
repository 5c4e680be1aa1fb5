package frontdoor

import (
	"context"
	"fmt"
	"sync"
)

// Lazy is a door opened at the first Apply that names a frontend: a daemon none of whose
// shapes has traffic runs no load balancer and needs none installed.
type Lazy struct {
	// Open opens the door (a private HAProxy started or adopted, an operator's socket
	// checked).
	Open func(ctx context.Context) (Door, error)

	mu   sync.Mutex
	door Door
}

// opened returns the door, opening it when want says a frontend needs it (nil otherwise).
func (l *Lazy) opened(ctx context.Context, want bool) (Door, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.door == nil && want {
		door, err := l.Open(ctx)
		if err != nil {
			return nil, fmt.Errorf("open the front door: %w", err)
		}

		l.door = door
	}

	return l.door, nil
}

// Apply implements Door.
func (l *Lazy) Apply(ctx context.Context, frontends []Frontend) error {
	door, err := l.opened(ctx, len(frontends) > 0)
	if err != nil || door == nil {
		return err
	}

	return door.Apply(ctx, frontends)
}

// Stats implements Door.
func (l *Lazy) Stats(ctx context.Context) (map[string]FrontendStats, error) {
	door, err := l.opened(ctx, false)
	if err != nil || door == nil {
		return map[string]FrontendStats{}, err
	}

	return door.Stats(ctx)
}

// Follow tells the door which frontends another member drives, for a door that can
// follow one (an operator's HAProxy several members reach); others ignore it.
func (l *Lazy) Follow(ctx context.Context, frontends []Frontend) error {
	door, err := l.opened(ctx, len(frontends) > 0)
	if err != nil || door == nil {
		return err
	}

	follower, ok := door.(interface {
		Follow(ctx context.Context, frontends []Frontend) error
	})
	if ok {
		return follower.Follow(ctx, frontends)
	}

	return nil
}

// Close implements Door: the load balancer runs on (a restarted daemon adopts it).
func (l *Lazy) Close() error {
	door, _ := l.opened(context.Background(), false)
	if door == nil {
		return nil
	}

	return door.Close()
}
