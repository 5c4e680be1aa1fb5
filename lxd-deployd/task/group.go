// Package task runs the daemon's background loops as one group: declared once, started
// together, stopped together within a time limit, naming any that did not stop (as
// canonical/lxd's lxd/task does, with names instead of indexes).
package task

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Func is a background loop: it runs until ctx ends.
type Func func(ctx context.Context)

// Group is a set of named loops sharing one life. Add them, Start once, Stop once; the zero
// Group is ready to use.
type Group struct {
	mu      sync.Mutex
	tasks   []named
	running map[string]int // loops started and not returned yet, by name
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

type named struct {
	name string
	f    Func
}

// StragglersError names the loops still running when Stop gave up waiting.
type StragglersError struct {
	Waited  time.Duration
	Running []string
}

func (e *StragglersError) Error() string {
	return fmt.Sprintf("background work still running after %s: %s", e.Waited, strings.Join(e.Running, ", "))
}

// Add declares a loop. The group is wired before it runs: adding to a started group panics.
func (g *Group) Add(name string, f Func) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		panic(fmt.Sprintf("task %q added to a group already started", name))
	}

	g.tasks = append(g.tasks, named{name: name, f: f})
}

// Start runs every loop in its own goroutine until ctx ends or Stop is called.
func (g *Group) Start(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		panic("task group started twice")
	}

	ctx, g.cancel = context.WithCancel(ctx)
	g.running = make(map[string]int, len(g.tasks))
	g.done.Add(len(g.tasks))
	for _, t := range g.tasks {
		g.running[t.name]++
		go func() {
			defer g.done.Done()
			defer g.returned(t.name)
			t.f(ctx)
		}()
	}
}

// returned takes a loop that ended off the running list.
func (g *Group) returned(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[name]--
	if g.running[name] == 0 {
		delete(g.running, name)
	}
}

// Stop cancels every loop and waits for them at most timeout (less if ctx ends first). The
// loops that did not return by then are left running (the process is about to exit) and
// named in a *StragglersError. Stopping a group never started returns nil.
func (g *Group) Stop(ctx context.Context, timeout time.Duration) error {
	g.mu.Lock()
	cancel := g.cancel
	g.mu.Unlock()
	if cancel == nil {
		return nil
	}

	cancel()
	stopped := make(chan struct{})
	go func() {
		g.done.Wait()
		close(stopped)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-stopped:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}

	return &StragglersError{Waited: timeout, Running: g.Running()}
}

// Running names the loops started and not returned yet, sorted.
func (g *Group) Running() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.running))
	for name := range g.running {
		names = append(names, name)
	}

	sort.Strings(names)
	return names
}
