package scheduler

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileClock: no file is the real clock; a file's time is read at each look, a file
// caught half written keeps the last time, and a file that does not hold a time refuses.
func TestFileClock(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock, err := FileClock("", logger)
	if err != nil || time.Since(clock()) > time.Minute {
		t.Fatalf("no file: %v", err)
	}

	path := filepath.Join(t.TempDir(), "clock")
	_, err = FileClock(path, logger)
	if err == nil {
		t.Fatal("a missing file gave a clock")
	}

	write := func(s string) {
		t.Helper()
		err := os.WriteFile(path, []byte(s), 0o600)
		if err != nil {
			t.Fatal(err)
		}
	}

	write("2026-03-29T00:59:00Z\n")
	clock, err = FileClock(path, logger)
	if err != nil {
		t.Fatal(err)
	}

	want := time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC)
	if !clock().Equal(want) {
		t.Fatalf("clock %v, want %v", clock(), want)
	}

	write("2026-03-29T01:0")
	if !clock().Equal(want) {
		t.Fatalf("half-written file: clock %v, want the last time %v", clock(), want)
	}

	write("2026-03-29T01:01:00Z")
	if !clock().Equal(want.Add(2 * time.Minute)) {
		t.Fatalf("moved file: clock %v", clock())
	}
}
