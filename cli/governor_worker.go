package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
)

// scaler is what the governor does to its deployment: the governor API (clientScaler), or a
// fake in tests. Launch and Delete return once the operation is over.
type scaler interface {
	// Shape returns a shape with its size (scaling_current) and bounds.
	Shape(ctx context.Context, shape string) (*api.DeploymentShape, error)

	// Instances lists the instances of a shape.
	Instances(ctx context.Context, shape string) ([]api.DeploymentInstance, error)

	// Launch creates and starts an instance of a shape; a shape at its maximum is a 409.
	Launch(ctx context.Context, shape string, name string) error

	// Delete stops and deletes an instance of a shape; a shape at its minimum is a 409.
	Delete(ctx context.Context, shape string, name string) error
}

// clientScaler is the scaler of a deployment through the governor API.
type clientScaler struct {
	server     *client.Server
	deployment string

	// opTimeout bounds the wait for one launch or delete (a VM can take minutes).
	opTimeout time.Duration
}

func (c *clientScaler) Shape(ctx context.Context, shape string) (*api.DeploymentShape, error) {
	s, _, err := c.server.GetDeploymentShape(c.deployment, shape)
	return s, err
}

func (c *clientScaler) Instances(ctx context.Context, shape string) ([]api.DeploymentInstance, error) {
	return c.server.GetDeploymentShapeInstances(c.deployment, shape)
}

func (c *clientScaler) Launch(ctx context.Context, shape string, name string) error {
	op, err := c.server.CreateDeploymentShapeInstance(c.deployment, shape, name)
	if err != nil {
		return err
	}

	return c.wait(ctx, op)
}

func (c *clientScaler) Delete(ctx context.Context, shape string, name string) error {
	op, err := c.server.DeleteDeploymentShapeInstance(c.deployment, shape, name)
	if err != nil {
		return err
	}

	return c.wait(ctx, op)
}

func (c *clientScaler) wait(ctx context.Context, op *client.Operation) error {
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout)
	defer cancel()
	return op.Wait(ctx)
}

// governorJob is one piece of work for a shape's worker.
type governorJob struct {
	event string // id of the event, for the log
	shape string
	kind  policy.Kind

	request api.WebhookScaleRequestMetadata // kind ScaleRequest
	metrics api.WebhookShapeMetrics         // kind Metrics
	value   float64                         // kind Query: what the shape's query returned
}

// governor runs one worker per shape: the jobs of a shape are handled one at a time, in
// order, so that two decisions never act on the same shape at once; shapes go in parallel.
type governor struct {
	ctx      context.Context // ends waits at shutdown
	scaler   scaler
	policy   *policy.Policy
	dryRun   bool
	log      *slog.Logger
	now      func() time.Time
	newName  func(shape string) (string, error)
	parallel int // launches or deletes at once within a shape

	mu     sync.Mutex
	shapes map[string]*shapeWorker
	wg     sync.WaitGroup
}

// shapeWorker is the queue and the policy state of one shape.
type shapeWorker struct {
	name    string
	state   *policy.State
	pending []governorJob
	running bool
}

func newGovernor(ctx context.Context, s scaler, p *policy.Policy, dryRun bool, log *slog.Logger) *governor {
	return &governor{
		ctx:      ctx,
		scaler:   s,
		policy:   p,
		dryRun:   dryRun,
		log:      log,
		now:      time.Now,
		newName:  func(shape string) (string, error) { return newInstanceName(shape, rand.Reader) },
		parallel: 3,
		shapes:   map[string]*shapeWorker{},
	}
}

// enqueue queues a job for its shape and starts the shape's worker if it is idle. A pending
// job of the same kind is replaced: only the latest metrics matter, and a newer scale
// request supersedes one not yet acted on.
func (g *governor) enqueue(shape string, j governorJob) {
	g.mu.Lock()
	defer g.mu.Unlock()

	w := g.shapes[shape]
	if w == nil {
		w = &shapeWorker{name: shape, state: policy.NewState(g.policy.Shape(shape))}
		g.shapes[shape] = w
	}

	kept := w.pending[:0]
	for _, p := range w.pending {
		if p.kind == j.kind {
			// Query values come every --query-interval, however long a launch takes: one
			// replacing another is routine, not news.
			level := slog.LevelInfo
			if j.kind == policy.Query {
				level = slog.LevelDebug
			}

			g.log.Log(g.ctx, level, "superseded before it was acted on", "shape", shape, "event", p.event, "trigger", p.kind, "by", j.event)
			continue
		}

		kept = append(kept, p)
	}

	w.pending = append(kept, j)
	if !w.running {
		w.running = true
		g.wg.Add(1)
		go g.work(w)
	}
}

// wait returns once every worker is idle (tests, shutdown).
func (g *governor) wait() {
	g.wg.Wait()
}

func (g *governor) work(w *shapeWorker) {
	defer g.wg.Done()
	for {
		g.mu.Lock()
		if len(w.pending) == 0 {
			w.running = false
			g.mu.Unlock()
			return
		}

		j := w.pending[0]
		w.pending = w.pending[1:]
		g.mu.Unlock()

		g.handle(w, j)
	}
}

// handle decides for one job and acts on the decision.
func (g *governor) handle(w *shapeWorker, j governorJob) {
	ctx := g.ctx
	if ctx.Err() != nil {
		return
	}

	log := g.log.With("shape", w.name, "event", j.event, "trigger", string(j.kind))
	var in policy.Input
	switch j.kind {
	case policy.ScaleRequest:
		shape, err := g.scaler.Shape(ctx, w.name)
		if err != nil {
			log.Error("cannot read the shape, scale request dropped", "err", err)
			return
		}

		in = policy.ScaleRequestInput(j.request, shape.ScalingCurrent, shape.ScalingMinimum, shape.ScalingMaximum)
	case policy.Metrics:
		g.vertical(ctx, log, w, j.metrics)
		in = policy.MetricsInput(j.metrics)
	case policy.Query:
		var ok bool
		in, ok = g.queryInput(ctx, log, w.name, j)
		if !ok {
			return
		}
	default:
		log.Error("unknown job")
		return
	}

	d := w.state.Decide(g.now(), in)

	// Metrics of shapes tracking neither CPU nor requests are no decision at all: keep them
	// out of the log. A requests shape logs "no traffic data" at info: it is why nothing moves.
	level := slog.LevelInfo
	tracked := w.state.Policy.CPUTarget > 0 || w.state.Policy.RequestsPerInstance > 0
	if j.kind == policy.Metrics && !tracked && d.Action() == policy.None {
		level = slog.LevelDebug
	}

	attrs := []any{"current", d.Current, "desired", d.Desired, "action", string(d.Action()), "why", d.Why}
	if g.dryRun {
		attrs = append(attrs, "dry_run", true)
	}

	log.Log(ctx, level, "decision", attrs...)
	if d.Action() == policy.None || g.dryRun {
		return
	}

	if j.kind == policy.Metrics {
		// The metrics were taken before the event was queued; if the shape changed since (a
		// scale request, an admin), the decision was made on a size that is gone.
		shape, err := g.scaler.Shape(ctx, w.name)
		if err != nil {
			log.Error("cannot read the shape, decision dropped", "err", err)
			return
		}

		if shape.ScalingCurrent != d.Current {
			log.Info("decision dropped: the shape changed since the metrics were taken", "then", d.Current, "now", shape.ScalingCurrent)
			return
		}
	}

	if g.scale(ctx, log, w.name, d.Delta()) > 0 {
		w.state.Scaled(g.now())
	}
}

// scale launches (delta > 0) or deletes (delta < 0) instances of a shape, a few at a time,
// and returns how many it did. The first failure, a 409 from the bounds included, stops
// the round: nothing more is started.
func (g *governor) scale(ctx context.Context, log *slog.Logger, shape string, delta int) int {
	if delta > 0 {
		names := make([]string, 0, delta)
		for range delta {
			name, err := g.newName(shape)
			if err != nil {
				log.Error("cannot make an instance name", "err", err)
				return 0
			}

			names = append(names, name)
		}

		return g.each(ctx, log, names, "launched", "launch", func(name string) error { return g.launch(ctx, log, shape, name) })
	}

	instances, err := g.scaler.Instances(ctx, shape)
	if err != nil {
		log.Error("cannot list the instances", "err", err)
		return 0
	}

	names := policy.ScaleDownOrder(instances, -delta)
	if len(names) < -delta {
		log.Warn("fewer instances to delete than the decision asks", "asked", -delta, "found", len(names))
	}

	return g.each(ctx, log, names, "deleted", "delete", func(name string) error { return g.scaler.Delete(ctx, shape, name) })
}

// launchRetryFor bounds how long a launch waits for deletes in flight, and launchRetryEvery
// how often it tries again meanwhile.
const (
	launchRetryFor   = time.Minute
	launchRetryEvery = 250 * time.Millisecond
)

// launch launches an instance, and tries again while a refusal at the maximum comes from
// instances still being deleted: lxd-deployd counts them against scaling_maximum until
// LXD has deleted them, which takes a moment. A refusal with nothing being deleted (the
// shape is full) is final for the round.
func (g *governor) launch(ctx context.Context, log *slog.Logger, shape string, name string) error {
	deadline := time.Now().Add(launchRetryFor)
	for {
		err := g.scaler.Launch(ctx, shape, name)
		if err == nil || !lxdapi.StatusErrorCheck(err, http.StatusConflict) || time.Now().After(deadline) {
			return err
		}

		instances, listErr := g.scaler.Instances(ctx, shape)
		if listErr != nil || policy.BeingDeleted(instances) == 0 {
			return err
		}

		log.Debug("launch waits for instances still being deleted", "instance", name, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(launchRetryEvery):
		}
	}
}

// each runs do for the names, at most g.parallel at once, and stops starting new ones at
// the first error.
func (g *governor) each(ctx context.Context, log *slog.Logger, names []string, done string, verb string, do func(name string) error) int {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		stopped bool
		count   int
	)

	slots := make(chan struct{}, max(g.parallel, 1))
	for _, name := range names {
		slots <- struct{}{}
		mu.Lock()
		stop := stopped || ctx.Err() != nil
		mu.Unlock()
		if stop {
			<-slots
			break
		}

		wg.Add(1)
		go func() {
			defer func() {
				<-slots
				wg.Done()
			}()

			start := time.Now()
			err := do(name)

			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				stopped = true
				if lxdapi.StatusErrorCheck(err, http.StatusConflict) {
					log.Warn(verb+" refused by lxd-deployd, round stopped", "instance", name, "err", err)
				} else {
					log.Error(verb+" failed, round stopped", "instance", name, "err", err)
				}

				return
			}

			count++
			log.Info(done, "instance", name, "took", time.Since(start).Round(time.Millisecond))
		}()
	}

	wg.Wait()
	return count
}

// nameAlphabet is what the random suffix of instance names is made of.
const nameAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newInstanceName returns "<shape>-<6 random lowercase letters and digits>", shortening the
// shape part so the name stays within the 63 characters of validate.Name.
func newInstanceName(shape string, random io.Reader) (string, error) {
	const suffixLength = 6
	prefix := shape
	if len(prefix) > 63-suffixLength-1 {
		prefix = strings.TrimRight(prefix[:63-suffixLength-1], "-")
	}

	suffix := make([]byte, 0, suffixLength)
	buf := make([]byte, 16)
	for len(suffix) < suffixLength {
		_, err := io.ReadFull(random, buf)
		if err != nil {
			return "", fmt.Errorf("random name: %w", err)
		}

		for _, b := range buf {
			// Rejection sampling: 252 is the largest multiple of 36 in a byte, so every
			// character is equally likely.
			if int(b) < 252 && len(suffix) < suffixLength {
				suffix = append(suffix, nameAlphabet[int(b)%len(nameAlphabet)])
			}
		}
	}

	return prefix + "-" + string(suffix), nil
}
