package task

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupStops runs loops until Stop, which waits for every one of them.
func TestGroupStops(t *testing.T) {
	var g Group
	var ended atomic.Int32
	for _, name := range []string{"a", "b", "c"} {
		g.Add(name, func(ctx context.Context) {
			<-ctx.Done()
			ended.Add(1)
		})
	}

	g.Start(context.Background())
	err := g.Stop(context.Background(), time.Minute)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}

	if ended.Load() != 3 {
		t.Fatalf("%d loops ended before Stop returned, want 3", ended.Load())
	}

	if running := g.Running(); len(running) != 0 {
		t.Fatalf("still running after a clean stop: %v", running)
	}
}

// TestGroupNamesStraggler gives up on a loop that ignores its context after the timeout,
// naming it and only it.
func TestGroupNamesStraggler(t *testing.T) {
	var g Group
	release := make(chan struct{})
	defer close(release)
	g.Add("polite", func(ctx context.Context) { <-ctx.Done() })
	g.Add("stuck", func(ctx context.Context) { <-release })
	g.Add("returns early", func(ctx context.Context) {})
	g.Start(context.Background())

	start := time.Now()
	err := g.Stop(context.Background(), 100*time.Millisecond)
	var stragglers *StragglersError
	if !errors.As(err, &stragglers) {
		t.Fatalf("stop with a stuck loop: got %v, want a StragglersError", err)
	}

	if !slices.Equal(stragglers.Running, []string{"stuck"}) {
		t.Fatalf("stragglers %v, want [stuck]", stragglers.Running)
	}

	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("stop returned after %s, before its timeout", took)
	}

	if want := "background work still running after 100ms: stuck"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

// TestGroupStopCtx stops waiting when the caller's context ends before the timeout.
func TestGroupStopCtx(t *testing.T) {
	var g Group
	release := make(chan struct{})
	defer close(release)
	g.Add("stuck", func(ctx context.Context) { <-release })
	g.Start(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := g.Stop(ctx, time.Hour)
	var stragglers *StragglersError
	if !errors.As(err, &stragglers) || !slices.Equal(stragglers.Running, []string{"stuck"}) {
		t.Fatalf("stop with an ended context: got %v, want stuck named", err)
	}
}

// TestGroupParentContext ends the loops when the context Start was given ends.
func TestGroupParentContext(t *testing.T) {
	var g Group
	ended := make(chan struct{})
	g.Add("loop", func(ctx context.Context) { <-ctx.Done(); close(ended) })
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	cancel()
	<-ended
	err := g.Stop(context.Background(), time.Minute)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// TestGroupNotStarted stops at once, and refuses loops added once started.
func TestGroupNotStarted(t *testing.T) {
	var g Group
	g.Add("never", func(ctx context.Context) { select {} })
	err := g.Stop(context.Background(), time.Millisecond)
	if err != nil {
		t.Fatalf("stop of a group never started: %v", err)
	}

	var started Group
	started.Start(context.Background())
	defer func() { _ = started.Stop(context.Background(), time.Second) }()
	defer func() {
		if recover() == nil {
			t.Fatal("Add after Start did not panic")
		}
	}()

	started.Add("late", func(ctx context.Context) {})
}
