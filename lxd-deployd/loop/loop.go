// Package loop runs the daemon's background rounds: every interval, or at once when poked.
package loop

import (
	"context"
	"log/slog"
	"time"
)

// Loop runs a background round every interval, or at once when poked: the shape of the
// autohealer, the hook keeper, the warm pool and the settling of lost operations.
type Loop struct {
	wake chan struct{}
}

// New returns a loop that can be poked. The zero Loop runs on its interval only.
func New() Loop {
	return Loop{wake: make(chan struct{}, 1)}
}

// Poke asks for a round now rather than at the next tick; pokes meanwhile add up to one.
func (l Loop) Poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run calls round until ctx ends, logging its errors as what.
func (l Loop) Run(ctx context.Context, interval time.Duration, logger *slog.Logger, what string, round func(ctx context.Context) error) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-l.wake:
		}

		err := round(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn(what, "err", err)
		}
	}
}

// Pokes returns the channel a poke sends on, for a loop that keeps its own timer (the image
// watcher) and selects on it beside others.
func (l Loop) Pokes() <-chan struct{} {
	return l.wake
}
