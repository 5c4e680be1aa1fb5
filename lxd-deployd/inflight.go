package main

import (
	"sync"
)

// inflight tracks the instances this daemon is creating or deleting right now, so that
// reconcile leaves their rows alone and only repairs those a crash left behind.
type inflight struct {
	mu    sync.Mutex
	names map[string]bool
}

func newInflight() *inflight {
	return &inflight{names: map[string]bool{}}
}

func inflightKey(project string, name string) string {
	return project + "/" + name
}

func (f *inflight) add(project string, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[inflightKey(project, name)] = true
}

func (f *inflight) remove(project string, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.names, inflightKey(project, name))
}

func (f *inflight) has(project string, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.names[inflightKey(project, name)]
}
