package operations

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// memoryRecorder keeps what a Recorder is given.
type memoryRecorder struct {
	mu     sync.Mutex
	states []lxdapi.StatusCode
	scope  []int64
}

func (r *memoryRecorder) Record(ctx context.Context, op lxdapi.Operation, project string, deploymentID int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, op.StatusCode)
	r.scope = append(r.scope, deploymentID)
	return nil
}

func (r *memoryRecorder) Forget(ctx context.Context, id string) error { return nil }

// TestOperationsAreRecorded: an operation is recorded before Start returns (so another
// member finds it at once), on each change, and when it finishes.
func TestOperationsAreRecorded(t *testing.T) {
	r := &memoryRecorder{}
	m := NewManager(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, "test", r)
	release := make(chan struct{})
	op := m.Start(Args{DeploymentID: 4, Run: func(ctx context.Context, op *Operation) error {
		<-release
		op.SetMetadata(map[string]any{"step": 1})
		return nil
	}})

	r.mu.Lock()
	first := len(r.states)
	r.mu.Unlock()
	if first != 1 {
		t.Fatalf("Start must record the operation before returning, recorded %d times", first)
	}

	close(release)
	op.Wait(context.Background(), -1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) != 3 || r.states[0] != lxdapi.Running || r.states[1] != lxdapi.Running || r.states[2] != lxdapi.Success {
		t.Fatalf("recorded states: %v", r.states)
	}

	for _, id := range r.scope {
		if id != 4 {
			t.Fatalf("recorded with deployment %d, want 4", id)
		}
	}
}
