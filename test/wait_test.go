package test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatal records the message and ends the goroutine,
// as testing's own Fatal does.
type fatalRecorder struct {
	testing.TB
	message string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.message = fmt.Sprint(args...)
	runtime.Goexit()
}

// runWait runs waitUntil against a fatalRecorder and returns what it failed with ("": it
// returned).
func runWait(timeout time.Duration, cond func() bool, opts ...waitOption) string {
	recorder := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		waitUntil(recorder, "the thing", timeout, cond, opts...)
	}()

	<-done
	return recorder.message
}

// TestWaitUntil checks the one wait of the end-to-end tests: it returns once cond holds,
// polling at the interval asked for, and after the timeout fails with what it waited for,
// the state last seen and the logs.
func TestWaitUntil(t *testing.T) {
	calls := 0
	if msg := runWait(time.Minute, func() bool { calls++; return calls == 3 }, every(time.Millisecond)); msg != "" || calls != 3 {
		t.Fatalf("a condition that holds on the third call: %d calls, failed %q", calls, msg)
	}

	seen := 0
	msg := runWait(50*time.Millisecond, func() bool { seen++; return false }, every(10*time.Millisecond),
		showing(func() string { return fmt.Sprintf("seen %d times", seen) }), withLog(func() string { return "the log" }))
	if !strings.HasPrefix(msg, "the thing: not within 50ms: seen ") || !strings.HasSuffix(msg, " times\nthe log") || seen < 3 {
		t.Fatalf("a condition that never holds: %d calls, failed %q", seen, msg)
	}
}
