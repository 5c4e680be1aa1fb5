package main

import (
	"context"
	"log/slog"
	"time"
)

// loop runs a background round every interval, or at once when poked: the shape of the
// autohealer, the hook keeper and the warm pool.
type loop struct {
	wake chan struct{}
}

func newLoop() loop {
	return loop{wake: make(chan struct{}, 1)}
}

// poke asks for a round now rather than at the next tick; pokes meanwhile add up to one.
func (l loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run calls round until ctx ends, logging its errors as what.
func (l loop) run(ctx context.Context, interval time.Duration, logger *slog.Logger, what string, round func(ctx context.Context) error) {
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
