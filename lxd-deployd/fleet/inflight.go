package fleet

import (
	"sync"
)

// inflight tracks the instances this daemon is creating or deleting right now, so that
// reconcile leaves their rows alone and only repairs those a crash left behind.
type Inflight struct {
	mu    sync.Mutex
	names map[string]bool
}

func NewInflight() *Inflight {
	return &Inflight{names: map[string]bool{}}
}

func inflightKey(project string, name string) string {
	return project + "/" + name
}

func (f *Inflight) Add(project string, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[inflightKey(project, name)] = true
}

func (f *Inflight) Remove(project string, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.names, inflightKey(project, name))
}

func (f *Inflight) Has(project string, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.names[inflightKey(project, name)]
}
