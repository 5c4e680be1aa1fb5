package health

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkCheckerAtScale prices what the checker asks of the database at 1,000 checked
// instances, without LXD: recording a tick's results (100 passing exec checks, as at one
// check every 10 s) and listing the targets again. The figures are the process's CPU, Go
// and dqlite's C threads alike, per round and per check. `make bench` runs it.
func BenchmarkCheckerAtScale(b *testing.B) {
	const n, perTick = 1000, 100
	cluster := dbtest.Open(b)
	rows, settings := checkedFleet(b, cluster, &api.DeploymentShapeHealth{Command: []string{"true"}, Grace: "0s"}, n)
	c := &Checker{DB: cluster, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	next := 0
	tick := func() {
		for range perTick {
			row := rows[next%len(rows)]
			next++
			c.pending = append(c.pending, pendingResult{target: target{row: row, settings: settings}, result: Result{At: time.Now(), Passed: true, Output: "ok"}})
		}

		c.flush(ctx)
	}

	b.Run("flush-100", func(b *testing.B) {
		tick() // warm: connections, statements, the first verdicts
		b.ResetTimer()
		before := processCPU()
		for i := 0; i < b.N; i++ {
			tick()
		}

		perRound := (processCPU() - before) / time.Duration(b.N)
		b.ReportMetric(float64(perRound.Microseconds())/1000, "cpu-ms/round")
		b.ReportMetric(float64(perRound.Microseconds())/1000/perTick, "cpu-ms/check")
	})

	b.Run("targets-1000", func(b *testing.B) {
		_, _ = c.targets(ctx)
		b.ResetTimer()
		before := processCPU()
		for i := 0; i < b.N; i++ {
			listed, err := c.targets(ctx)
			if err != nil || len(listed) != n {
				b.Fatalf("%d targets, %v", len(listed), err)
			}
		}

		perRound := (processCPU() - before) / time.Duration(b.N)
		b.ReportMetric(float64(perRound.Microseconds())/1000, "cpu-ms/round")
	})
}

// processCPU is the process's CPU time so far, user and system, every thread.
func processCPU() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
