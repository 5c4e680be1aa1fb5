package isolate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// ChildArg is the first argument that makes a binary run as an expansion child. Every
// binary that uses a Runner calls MaybeChild first thing in main.
const ChildArg = "__lxd-deploy-expand"

// MaybeChild runs the expansion child and exits when the process was started as one (its
// first argument is ChildArg); otherwise it returns at once.
func MaybeChild() {
	if len(os.Args) < 2 || os.Args[1] != ChildArg {
		return
	}

	os.Exit(runChild(os.Args[2:], os.Stdin, os.Stdout))
}

// runChild is the child: args are the memory limit in bytes and the CPU limit in seconds.
// It limits itself before it reads anything, expands the one request on in, and answers on
// out. The exit code is 0 whenever it answered, even with an expansion error.
func runChild(args []string, in io.Reader, out io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s MAX_MEMORY_BYTES MAX_CPU_SECONDS\n", ChildArg)
		return 2
	}

	maxMemory, err1 := strconv.ParseInt(args[0], 10, 64)
	cpuSeconds, err2 := strconv.ParseUint(args[1], 10, 64)
	if err1 != nil || err2 != nil || maxMemory <= 0 || cpuSeconds == 0 {
		fmt.Fprintf(os.Stderr, "%s: bad limits %q\n", ChildArg, args)
		return 2
	}

	baseline, err := limitSelf(maxMemory, cpuSeconds)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", ChildArg, err)
		return 2
	}

	c := &child{dec: json.NewDecoder(in), enc: json.NewEncoder(out)}

	// The kernel sends SIGXCPU at the soft CPU limit (and SIGKILL a second later): answer
	// with a limit error while there is time, rather than die without a word.
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		c.send(message{Error: &wireError{Expand: true, Limit: true, Msg: fmt.Sprintf("CPU time limit (%ds) exceeded: simplify the templates (loops, recursion, large strings)", cpuSeconds)}})
		os.Exit(0)
	}()

	var req request
	err = c.dec.Decode(&req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: read request: %v\n", ChildArg, err)
		return 2
	}

	ctx := context.Background()
	if req.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Budget)
		defer cancel()
	}

	opts := templates.Options{Env: req.Env, Limits: req.Limits, StrictUndefined: req.StrictUndefined}
	if req.Fetch {
		opts.Fetch = c
	}

	exp, err := templates.Expand(ctx, req.Config, req.Imports, opts)
	if err != nil {
		c.send(message{Error: encodeError(err)})
		return 0
	}

	stats := Stats{Baseline: baseline}
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) == nil {
		stats.MaxRSS = usage.Maxrss << 10 // kilobytes on Linux
	}

	c.send(message{Result: &result{Expansion: exp, Fetched: exp.Fetched, Stats: stats}})
	return 0
}

// limitSelf sets the child's address-space and CPU limits. The address-space limit is the
// allowance on top of what the process has mapped already (its baseline: the binary, the Go
// runtime's reservations, thread stacks, and with -race the detector's shadow), plus room
// for the runtime's own growth, so that it measures what templates allocate whatever the
// binary. debug.SetMemoryLimit makes the collector work hard before the hard limit is hit.
func limitSelf(maxMemory int64, cpuSeconds uint64) (int64, error) {
	baseline, err := VirtualMemory()
	if err != nil {
		return 0, err
	}

	debug.SetMemoryLimit(maxMemory)
	limit := uint64(baseline) + uint64(maxMemory) + RuntimeHeadroom
	err = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
	if err != nil {
		return 0, fmt.Errorf("set the address-space limit: %w", err)
	}

	err = syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpuSeconds, Max: cpuSeconds + 1})
	if err != nil {
		return 0, fmt.Errorf("set the CPU limit: %w", err)
	}

	return baseline, nil
}

// RuntimeHeadroom is address space the child may map beyond its baseline and its memory
// allowance: new threads' stacks (8 MiB each with cgo) and the Go heap's arena rounding.
const RuntimeHeadroom = 256 << 20

// VirtualMemory is the process's mapped address space in bytes (/proc/self/statm).
func VirtualMemory() (int64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("read the process's memory size: %w", err)
	}

	var pages int64
	_, err = fmt.Sscan(string(data), &pages)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/self/statm: %w", err)
	}

	return pages * int64(os.Getpagesize()), nil
}

// child is the child's end of the pipe; it is the expansion's Fetcher, asking the parent.
type child struct {
	mu  sync.Mutex // one message at a time, and one fetch round trip at a time
	dec *json.Decoder
	enc *json.Encoder
}

func (c *child) send(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.enc.Encode(m)
}

// Fetch implements templates.Fetcher by asking the parent.
func (c *child) Fetch(ctx context.Context, typ string) (*registry.Bundle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	err := c.enc.Encode(message{Fetch: typ})
	if err != nil {
		return nil, fmt.Errorf("ask for %s: %w", typ, err)
	}

	var reply fetchReply
	err = c.dec.Decode(&reply)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: no answer from the daemon: %w", typ, err)
	}

	if reply.Error != nil {
		return nil, reply.Error.decode()
	}

	if reply.Bundle == nil {
		return nil, fmt.Errorf("fetch %s: empty answer", typ)
	}

	return reply.Bundle, nil
}

// LimitThisProcess caps the calling process's address space at its current size plus
// maxMemory (and RuntimeHeadroom): for tests and fuzz targets that run hostile templates in
// process, so that a runaway allocation kills the test binary, not the machine.
func LimitThisProcess(maxMemory int64) error {
	baseline, err := VirtualMemory()
	if err != nil {
		return err
	}

	limit := uint64(baseline) + uint64(maxMemory) + RuntimeHeadroom
	var current syscall.Rlimit
	err = syscall.Getrlimit(syscall.RLIMIT_AS, &current)
	if err == nil && current.Cur <= limit {
		return nil // Already as tight.
	}

	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
}
