// Package isolate runs template expansion in a child process with an address-space limit, a
// CPU-time limit and a wall-clock kill, so that a hostile template (a billion-element list,
// a string doubled forty times, a builtin that ignores the step limit) costs a child its
// life and the caller a clear error, never the daemon or the CLI its memory or a core.
//
// The child is the same binary started again with ChildArg as its first argument (main
// calls MaybeChild first thing). It gets the config and imports on stdin and answers on
// stdout; fetches of URL and registry types go back to the parent, whose fetcher decides
// what may be fetched. The parent reads a bounded answer.
package isolate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
)

// Defaults of a Runner's zero fields.
const (
	// DefaultMaxMemory is the memory a child may allocate beyond its baseline
	// (template.max_memory).
	DefaultMaxMemory = 512 << 20

	// DefaultBudget is the wall-clock time of one expansion, fetches included.
	DefaultBudget = 30 * time.Second

	// DefaultMaxResult caps the answer the parent reads. The 10,000-shape expansion
	// answers in about 10 MiB.
	DefaultMaxResult = 256 << 20
)

// Runner expands configs in child processes. The zero value re-executes the running binary
// with the defaults.
type Runner struct {
	// Path is the binary to run as the child (default: os.Executable()). It must call
	// MaybeChild at the start of main.
	Path string

	// MaxMemory is the address space in bytes the child may map beyond its baseline.
	MaxMemory int64

	// Budget is the wall-clock time of one expansion; the child is killed at it. Its CPU
	// time is limited to the same number of seconds (plus one), a backstop that holds
	// even if the parent cannot kill it.
	Budget time.Duration

	// MaxResult caps the bytes read from the child.
	MaxResult int64

	// MaxConcurrent caps the children running at once (0: no cap), so that a burst of
	// expansion requests costs at most MaxConcurrent x MaxMemory; others wait their turn
	// within their own budget.
	MaxConcurrent int

	slotsOnce sync.Once
	slots     chan struct{}
}

// ErrChild is wrapped by the errors of a child that died or misbehaved without answering:
// out of memory, killed at the budget, or a broken answer.
var ErrChild = errors.New("template expansion process failed")

// Expand expands a config as templates.Expand does, in a child process. opts.Fetch, when
// set, runs in the parent for each URL or registry type the child asks for.
func (r *Runner) Expand(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, error) {
	exp, _, err := r.expandStats(ctx, config, imports, opts)
	return exp, err
}

// expandStats is Expand with the child's memory figures.
func (r *Runner) expandStats(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, Stats, error) {
	path := r.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, Stats{}, fmt.Errorf("%w: find the running binary: %v", ErrChild, err)
		}

		path = exe
	}

	maxMemory := r.MaxMemory
	if maxMemory <= 0 {
		maxMemory = DefaultMaxMemory
	}

	budget := r.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}

	maxResult := r.MaxResult
	if maxResult <= 0 {
		maxResult = DefaultMaxResult
	}

	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	if r.MaxConcurrent > 0 {
		r.slotsOnce.Do(func() { r.slots = make(chan struct{}, r.MaxConcurrent) })
		select {
		case r.slots <- struct{}{}:
			defer func() { <-r.slots }()
		case <-ctx.Done():
			return nil, Stats{}, &templates.ExpandError{Msg: fmt.Sprintf("the daemon is busy expanding other configs (%d at once) and the %s budget ran out waiting: try again", r.MaxConcurrent, budget), Err: templates.ErrLimit}
		}
	}

	cpuSeconds := int64(budget/time.Second) + 1
	cmd := exec.CommandContext(ctx, path, ChildArg, strconv.FormatInt(maxMemory, 10), strconv.FormatInt(cpuSeconds, 10))
	cmd.WaitDelay = time.Second
	stderr := &headBuffer{max: 4096}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, Stats{}, fmt.Errorf("%w: %v", ErrChild, err)
	}

	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, Stats{}, fmt.Errorf("%w: %v", ErrChild, err)
	}

	err = cmd.Start()
	if err != nil {
		return nil, Stats{}, fmt.Errorf("%w: start %s: %v", ErrChild, path, err)
	}

	counted := &countReader{r: io.LimitReader(stdout, maxResult)}
	exp, stats, answered, talkErr := r.talk(ctx, stdin, counted, config, imports, opts, budget)
	_ = stdin.Close()
	if talkErr != nil || !answered {
		// Do not wait for a child that misbehaves.
		_ = cmd.Process.Kill()
	}

	waitErr := cmd.Wait()
	if answered {
		return exp, stats, talkErr
	}

	return nil, Stats{}, childFailure(ctx, talkErr, waitErr, stderr.String(), maxMemory, budget, counted.n >= maxResult)
}

// talk sends the request, serves fetches, and reads the answer. answered is true when the
// child sent a result or an expansion error (returned as err).
func (r *Runner) talk(ctx context.Context, stdin io.Writer, stdout io.Reader, config []byte, imports map[string][]byte, opts templates.Options, budget time.Duration) (*templates.Expansion, Stats, bool, error) {
	enc := json.NewEncoder(stdin)
	dec := json.NewDecoder(stdout)
	dec.UseNumber()

	err := enc.Encode(request{Config: config, Imports: imports, Env: opts.Env, Limits: opts.Limits, StrictUndefined: opts.StrictUndefined, Budget: budget, Fetch: opts.Fetch != nil})
	if err != nil {
		return nil, Stats{}, false, fmt.Errorf("send the request: %w", err)
	}

	for {
		var m message
		err := dec.Decode(&m)
		if err != nil {
			return nil, Stats{}, false, fmt.Errorf("read the answer: %w", err)
		}

		switch {
		case m.Fetch != "":
			reply := fetchReply{}
			if opts.Fetch == nil {
				reply.Error = &wireError{Msg: "no fetcher"}
			} else {
				bundle, err := opts.Fetch.Fetch(ctx, m.Fetch)
				if err != nil {
					reply.Error = encodeError(err)
				} else {
					reply.Bundle = bundle
				}
			}

			err := enc.Encode(reply)
			if err != nil {
				return nil, Stats{}, false, fmt.Errorf("send a fetched template: %w", err)
			}
		case m.Error != nil:
			return nil, Stats{}, true, m.Error.decode()
		case m.Result != nil && m.Result.Expansion != nil:
			exp := m.Result.Expansion
			normalizeExpansion(exp)
			exp.Fetched = m.Result.Fetched
			if exp.Fetched == nil {
				exp.Fetched = map[string][]byte{}
			}

			return exp, m.Result.Stats, true, nil
		default:
			return nil, Stats{}, false, errors.New("unexpected message")
		}
	}
}

// childFailure explains a child that did not answer, in terms of the limit it most likely
// hit. The child's output is never part of the message: it may hold template content.
func childFailure(ctx context.Context, talkErr error, waitErr error, stderr string, maxMemory int64, budget time.Duration, overResult bool) error {
	var exit *exec.ExitError
	errors.As(waitErr, &exit)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &templates.ExpandError{Msg: fmt.Sprintf("expansion time limit (%s) exceeded: the templates ran too long; simplify them (loops, recursion, large strings)", budget), Err: errors.Join(templates.ErrLimit, ErrChild)}
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrChild, ctx.Err())
	case outOfMemory(stderr):
		return &templates.ExpandError{Msg: fmt.Sprintf("expansion memory limit (%d MiB) exceeded: the templates built values too large (lists, strings); make them smaller, or raise the template memory limit", maxMemory>>20), Err: errors.Join(templates.ErrLimit, ErrChild)}
	case overResult:
		return &templates.ExpandError{Msg: "expansion result is over the size limit: expand fewer resources", Err: errors.Join(templates.ErrLimit, ErrChild)}
	case exit != nil && exit.ProcessState != nil && !exit.Exited():
		return &templates.ExpandError{Msg: fmt.Sprintf("expansion process was killed (%s): the templates exceeded a memory or CPU limit", exit.ProcessState), Err: errors.Join(templates.ErrLimit, ErrChild)}
	}

	return fmt.Errorf("%w: %v (exit: %v)", ErrChild, talkErr, waitErr)
}

// outOfMemorySigns are what a child that hit its address-space limit prints before dying:
// the Go runtime ("fatal error: out of memory", "cannot allocate memory"), and with the
// race detector, ThreadSanitizer ("failed to allocate ... errno: 12") or the runtime's
// "too many address space collisions". The child cannot answer then (Go does not recover
// from running out of memory), so its first words are the only signal.
var outOfMemorySigns = []string{"out of memory", "cannot allocate memory", "failed to allocate", "errno: 12", "address space collisions"}

func outOfMemory(stderr string) bool {
	for _, sign := range outOfMemorySigns {
		if strings.Contains(stderr, sign) {
			return true
		}
	}

	return false
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// headBuffer keeps the first max bytes written to it: enough of a child's stderr to tell
// an out-of-memory crash (the runtime says so before its stack dump), never all of a
// runaway's output.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	room := h.max - h.buf.Len()
	if room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}

	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}
