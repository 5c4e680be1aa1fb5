package scheduler

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

const (
	// Interval is how often the lease holder looks for due actions: cron's resolution is
	// the minute, so an action fires within seconds of its time.
	Interval = 2 * time.Second

	// TestClockInterval is that with a test clock, so that tests do not wait.
	TestClockInterval = 200 * time.Millisecond
)

// FileClock is the scheduler's clock: time.Now when path is empty, or, for tests only,
// the time written in the file at path (--test-clock-file: RFC 3339, read at each look,
// so a test moves it by rewriting the file; doc/daemon.md). Only the scheduler reads it:
// leases, TTLs and logs keep real time.
func FileClock(path string, logger *slog.Logger) (Clock, error) {
	if path == "" {
		return time.Now, nil
	}

	read := func() (time.Time, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return time.Time{}, err
		}

		return time.Parse(time.RFC3339, strings.TrimSpace(string(data)))
	}

	first, err := read()
	if err != nil {
		return nil, fmt.Errorf("--test-clock-file %s: %w (write an RFC 3339 time in it)", path, err)
	}

	logger.Warn("the scheduler runs on a test clock: never use --test-clock-file outside tests", "file", path, "now", first)
	var mu sync.Mutex
	last := first
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t, err := read()
		if err == nil {
			last = t
		}

		// A file caught half written keeps the last time read.
		return last
	}, nil
}
