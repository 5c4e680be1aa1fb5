// Package operations runs background work the LXD way: a request answers 202 with an
// operation URL at once, and the caller polls it, waits on it or watches /1.0/events.
package operations

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
)

// retention is how long a finished operation stays visible.
const retention = 5 * time.Minute

// Args describe an operation to start.
type Args struct {
	// Description says what the operation does, e.g. "Creating instance web1".
	Description string

	// Project and DeploymentID scope who may see the operation.
	Project      string
	DeploymentID int64

	// Resources lists the URLs the operation touches, as LXD does.
	Resources map[string][]string

	// Run does the work; its error becomes the operation's err. It must honour ctx, which
	// is cancelled by DELETE /1.0/operations/{id} and on shutdown.
	Run func(ctx context.Context, op *Operation) error

	// Uncancellable operations refuse DELETE and run to the end through shutdown: work
	// whose interruption would leave LXD and the records disagreeing (launches, deletes).
	Uncancellable bool

	// Logger, when set, is the logger of the request that started the operation, so that
	// the operation's log lines carry the request's id as well as the operation's own.
	Logger *slog.Logger
}

// Operation is one background task.
type Operation struct {
	manager      *Manager
	id           string
	description  string
	project      string
	deploymentID int64
	resources    map[string][]string
	createdAt    time.Time
	cancel       context.CancelFunc
	done         chan struct{}
	cancellable  bool
	logger       *slog.Logger

	mu        sync.Mutex
	status    lxdapi.StatusCode
	updatedAt time.Time
	metadata  map[string]any
	err       string
}

// Recorder keeps a copy of every operation where the other members of a cluster can read
// it (dqlite), so any member can list them and find which member runs one.
type Recorder interface {
	// Record saves the operation's current state with who may see it.
	Record(ctx context.Context, op lxdapi.Operation, project string, deploymentID int64) error

	// Forget removes a finished operation once its retention has passed.
	Forget(ctx context.Context, id string) error
}

// Manager keeps this daemon's operations.
type Manager struct {
	logger   *slog.Logger
	events   *events.Server
	location string

	// recorder, when set, gets every state change.
	recorder Recorder

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.RWMutex
	ops map[string]*Operation
}

// NewManager returns an operation manager that reports updates to the event server and,
// when recorder is not nil, records every operation's state changes through it.
func NewManager(logger *slog.Logger, eventServer *events.Server, location string, recorder Recorder) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{logger: logger, events: eventServer, location: location, recorder: recorder, ctx: ctx, cancel: cancel, ops: map[string]*Operation{}}
}

// record saves the operation's state through the recorder, if any. A failure (the
// database has no leader for a moment) costs other members a stale view, not the
// operation, so it is logged and not returned.
func (op *Operation) record() {
	if op.manager.recorder == nil {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := op.manager.recorder.Record(ctx, op.API(), op.project, op.deploymentID)
	if err != nil {
		op.manager.logger.Warn("record operation", "id", op.id, "err", err)
	}
}

// Start creates an operation and runs it in the background.
func (m *Manager) Start(args Args) *Operation {
	idBytes := make([]byte, 16)
	_, _ = rand.Read(idBytes)
	id := hex.EncodeToString(idBytes)
	id = fmt.Sprintf("%s-%s-%s-%s-%s", id[0:8], id[8:12], id[12:16], id[16:20], id[20:32])

	parent := m.ctx
	if args.Uncancellable {
		parent = context.WithoutCancel(m.ctx)
	}

	ctx, cancel := context.WithCancel(parent)
	now := time.Now().UTC()
	op := &Operation{
		manager:      m,
		id:           id,
		description:  args.Description,
		project:      args.Project,
		deploymentID: args.DeploymentID,
		resources:    args.Resources,
		createdAt:    now,
		updatedAt:    now,
		cancel:       cancel,
		done:         make(chan struct{}),
		cancellable:  !args.Uncancellable,
		logger:       cmp.Or(args.Logger, m.logger).With("operation", id),
		status:       lxdapi.Running,
		metadata:     map[string]any{},
	}

	m.mu.Lock()
	m.ops[id] = op
	m.mu.Unlock()

	// Recorded before the caller answers 202, so that a client asking another member
	// about the operation right away finds it.
	op.record()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		op.sendEvent() // recorded already
		op.logger.Debug("operation started", "description", op.description)
		err := args.Run(ctx, op)
		op.finish(err)
	}()

	return op
}

// finish records the outcome, tells listeners, and schedules the operation's removal.
func (op *Operation) finish(err error) {
	op.mu.Lock()
	switch {
	case err == nil:
		op.status = lxdapi.Success
	case errors.Is(err, context.Canceled):
		op.status = lxdapi.Cancelled
		op.err = err.Error()
	default:
		op.status = lxdapi.Failure
		op.err = err.Error()
	}

	op.updatedAt = time.Now().UTC()
	op.mu.Unlock()

	// Recorded before waiters wake, so that a waiter reading the record (on any member)
	// afterwards sees the outcome.
	op.record()
	close(op.done)
	op.sendEvent()
	if err != nil {
		op.logger.Warn("operation failed", "description", op.description, "err", err)
	} else {
		op.logger.Debug("operation succeeded", "description", op.description)
	}

	time.AfterFunc(retention, func() {
		op.manager.mu.Lock()
		delete(op.manager.ops, op.id)
		op.manager.mu.Unlock()
		if op.manager.recorder != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = op.manager.recorder.Forget(ctx, op.id)
		}
	})
}

// SetMetadata merges values into the operation's metadata and tells listeners.
func (op *Operation) SetMetadata(values map[string]any) {
	op.mu.Lock()
	for k, v := range values {
		op.metadata[k] = v
	}

	op.updatedAt = time.Now().UTC()
	op.mu.Unlock()
	op.notify()
}

// notify records the operation's new state and tells event listeners.
func (op *Operation) notify() {
	op.record()
	op.sendEvent()
}

func (op *Operation) sendEvent() {
	if op.manager.events != nil {
		op.manager.events.Send(lxdapi.EventTypeOperation, op.project, op.deploymentID, op.API())
	}
}

// ID returns the operation's id.
func (op *Operation) ID() string {
	return op.id
}

// DeploymentID returns the deployment the operation concerns (0: none).
func (op *Operation) DeploymentID() int64 {
	return op.deploymentID
}

// URL returns the operation's URL.
func (op *Operation) URL() string {
	return "/1.0/operations/" + op.id
}

// Done is closed when the operation has finished.
func (op *Operation) Done() <-chan struct{} {
	return op.done
}

// API returns the operation in LXD's representation.
func (op *Operation) API() lxdapi.Operation {
	op.mu.Lock()
	defer op.mu.Unlock()
	metadata := make(map[string]any, len(op.metadata))
	for k, v := range op.metadata {
		metadata[k] = v
	}

	return lxdapi.Operation{
		ID:          op.id,
		Class:       lxdapi.OperationClassTask,
		Description: op.description,
		CreatedAt:   op.createdAt,
		UpdatedAt:   op.updatedAt,
		Status:      op.status.String(),
		StatusCode:  op.status,
		Resources:   op.resources,
		Metadata:    metadata,
		MayCancel:   op.cancellable && op.status == lxdapi.Running,
		Err:         op.err,
		Location:    op.manager.location,
	}
}

// Get returns an operation, or a 404.
func (m *Manager) Get(id string) (*Operation, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	op, ok := m.ops[id]
	if !ok {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "operation %q not found (finished operations are kept for %s)", id, retention)
	}

	return op, nil
}

// List returns the operations visible to a filter, oldest first.
func (m *Manager) List(allowed events.Filter) []*Operation {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ops := []*Operation{}
	for _, op := range m.ops {
		if allowed(op.deploymentID) {
			ops = append(ops, op)
		}
	}

	sort.Slice(ops, func(i, j int) bool { return ops[i].createdAt.Before(ops[j].createdAt) })
	return ops
}

// Wait blocks until the operation finishes, the timeout passes (negative: no timeout) or ctx
// ends, and returns its state then.
func (op *Operation) Wait(ctx context.Context, timeout time.Duration) lxdapi.Operation {
	var expired <-chan time.Time
	if timeout >= 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}

	select {
	case <-op.done:
	case <-expired:
	case <-ctx.Done():
	}

	return op.API()
}

// Cancel asks a running operation to stop.
func (op *Operation) Cancel() error {
	select {
	case <-op.done:
		return lxdapi.StatusErrorf(http.StatusBadRequest, "operation %s has already finished", op.id)
	default:
	}

	if !op.cancellable {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "operation %s cannot be cancelled: stopping it half way would leave LXD and the records disagreeing", op.id)
	}

	op.cancel()
	return nil
}

// Running reports how many operations have not finished.
func (m *Manager) Running() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	count := 0
	for _, op := range m.ops {
		select {
		case <-op.done:
		default:
			count++
		}
	}

	return count
}

// shutdownGrace bounds the wait for uncancellable operations once ctx has ended; past it
// the daemon exits and reconcile settles what was left.
const shutdownGrace = 3 * time.Second

// Shutdown waits for running operations to finish until ctx ends, then cancels those that
// may be cancelled and waits a little longer for the rest.
func (m *Manager) Shutdown(ctx context.Context) {
	finished := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(finished)
	}()

	select {
	case <-finished:
		return
	case <-ctx.Done():
	}

	m.cancel()
	select {
	case <-finished:
	case <-time.After(shutdownGrace):
		m.logger.Warn("operations still running at shutdown: reconcile will settle them on the next start")
	}
}
