package operations

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func newManager() *Manager {
	return NewManager(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, "test", nil)
}

func TestOperationOutcomes(t *testing.T) {
	m := newManager()
	release := make(chan struct{})
	ok := m.Start(Args{Description: "ok", DeploymentID: 1, Run: func(ctx context.Context, op *Operation) error {
		<-release
		op.SetMetadata(map[string]any{"progress": "done"})
		return nil
	}})

	failed := m.Start(Args{Description: "fails", DeploymentID: 2, Run: func(ctx context.Context, op *Operation) error {
		return errors.New("LXD said no")
	}})

	// A wait with a timeout returns the running state; without one it blocks to the end.
	if state := ok.Wait(context.Background(), 10*time.Millisecond); state.StatusCode != lxdapi.Running || !state.MayCancel {
		t.Fatalf("running operation: %+v", state)
	}

	close(release)
	if state := ok.Wait(context.Background(), -1); state.StatusCode != lxdapi.Success || state.Metadata["progress"] != "done" {
		t.Fatalf("finished operation: %+v", state)
	}

	if state := failed.Wait(context.Background(), -1); state.StatusCode != lxdapi.Failure || state.Err != "LXD said no" {
		t.Fatalf("failed operation: %+v", state)
	}

	if len(m.List(func(id int64) bool { return id == 2 })) != 1 {
		t.Fatal("List must apply the filter")
	}

	got, err := m.Get(ok.ID())
	if err != nil || got != ok {
		t.Fatalf("Get: %v", err)
	}

	_, err = m.Get("nope")
	if code, _ := lxdapi.StatusErrorMatch(err); code != 404 {
		t.Fatalf("unknown operation: %v", err)
	}
}

func TestOperationCancel(t *testing.T) {
	m := newManager()
	op := m.Start(Args{Run: func(ctx context.Context, op *Operation) error {
		<-ctx.Done()
		return ctx.Err()
	}})

	if err := op.Cancel(); err != nil {
		t.Fatal(err)
	}

	if state := op.Wait(context.Background(), time.Second); state.StatusCode != lxdapi.Cancelled {
		t.Fatalf("cancelled operation: %+v", state)
	}

	if op.Cancel() == nil {
		t.Fatal("cancelling a finished operation must fail")
	}
}

func TestShutdownCancelsAfterGrace(t *testing.T) {
	m := newManager()
	op := m.Start(Args{Run: func(ctx context.Context, op *Operation) error {
		<-ctx.Done()
		return ctx.Err()
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	m.Shutdown(ctx)
	select {
	case <-op.Done():
	default:
		t.Fatal("shutdown must end running operations once its grace period is over")
	}
}

func TestUncancellableOperation(t *testing.T) {
	m := newManager()
	release := make(chan struct{})
	op := m.Start(Args{Uncancellable: true, Run: func(ctx context.Context, op *Operation) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})

	if op.API().MayCancel {
		t.Fatal("an uncancellable operation must not offer cancel")
	}

	if code, _ := lxdapi.StatusErrorMatch(op.Cancel()); code != 400 {
		t.Fatal("cancel must be refused with 400")
	}

	// Shutdown's cancel does not reach it either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(release)
	}()

	m.Shutdown(ctx)
	if state := op.API(); state.StatusCode != lxdapi.Success {
		t.Fatalf("the operation must run to its end: %+v", state)
	}
}
