package templates

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/nikolalohinski/gonja/v2/exec"
)

type limitHit struct {
	what  string
	limit any
	hint  string
}

// jinjaBudget is one render's allowance. Only the render's goroutine uses it, but stop
// and limitHit may be called from the caller's.
type jinjaBudget struct {
	ctx      context.Context
	maxSteps int64
	maxBytes int
	steps    int64
	depth    int
	stopped  atomic.Bool

	// sites are the checks of Jinja2's Undefined (nil in strict mode, see
	// jinja_undefined.go); failures and warnings are what they found.
	sites *undefinedSites

	mu       sync.Mutex
	hit      *limitHit
	failures []*undefinedError
	warnings []Warning
}

func newJinjaBudget(ctx context.Context, l Limits) *jinjaBudget {
	return &jinjaBudget{ctx: ctx, maxSteps: l.Steps, maxBytes: l.OutputBytes}
}

func (b *jinjaBudget) fail(what string, limit any, hint string) error {
	b.mu.Lock()
	if b.hit == nil {
		b.hit = &limitHit{what: what, limit: limit, hint: hint}
	}

	b.mu.Unlock()
	b.stopped.Store(true)
	return fmt.Errorf("%s limit exceeded", what)
}

func (b *jinjaBudget) limitHit() *limitHit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hit
}

func (b *jinjaBudget) stop() {
	b.stopped.Store(true)
}

// charge takes n steps, and is where a stopped render notices it.
func (b *jinjaBudget) charge(n int64) error {
	if b.stopped.Load() || b.ctx.Err() != nil {
		return fmt.Errorf("render stopped")
	}

	b.steps += n
	if b.steps > b.maxSteps {
		return b.fail("step", b.maxSteps, "the template loops too much; make it do less work or raise the limit")
	}

	return nil
}

func (b *jinjaBudget) tooLarge() error {
	return b.fail("output size", fmt.Sprintf("%d bytes", b.maxBytes), "the template builds too much text; make it smaller or raise the limit")
}

// rangeFunction replaces Jinja's range(): the same arguments, but its elements cost steps.
func (b *jinjaBudget) rangeFunction(params *exec.VarArgs) ([]any, error) {
	args := []int{}
	for _, a := range params.Args {
		if !a.IsInteger() {
			return nil, fmt.Errorf("range() takes integers: [start, ]stop[, step]")
		}

		args = append(args, a.Integer())
	}

	start, stop, step := 0, 0, 1
	switch len(args) {
	case 1:
		stop = args[0]
	case 2:
		start, stop = args[0], args[1]
	case 3:
		start, stop, step = args[0], args[1], args[2]
	default:
		return nil, fmt.Errorf("range() takes 1 to 3 integers: [start, ]stop[, step]")
	}

	if step == 0 {
		return nil, fmt.Errorf("range() step must not be zero")
	}

	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}

	err := b.charge(int64(n))
	if err != nil {
		return nil, err
	}

	out := make([]any, n)
	for i := range out {
		out[i] = start + i*step
	}

	return out, nil
}

func budgetOf(ctx *exec.Context) *jinjaBudget {
	v, _ := ctx.Get(budgetKey)
	b, _ := v.(*jinjaBudget)
	return b
}

// capWriter is a render's output, capped.
type capWriter struct {
	budget *jinjaBudget
	buf    bytes.Buffer
	inner  io.Writer // nil: write to buf
	n      int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.budget.stopped.Load() {
		return 0, fmt.Errorf("render stopped")
	}

	w.n += len(p)
	if w.n > w.budget.maxBytes {
		return 0, w.budget.tooLarge()
	}

	if w.inner != nil {
		return w.inner.Write(p)
	}

	return w.buf.Write(p)
}
