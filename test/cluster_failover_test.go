package test

import (
	"fmt"
	"testing"
	"time"
)

// measureLeaderLoss runs a write every 20 ms against m2 while m1, the database leader,
// is stopped by stopLeader; it returns the longest write, the writes acknowledged but
// missing afterwards, and the writes that failed.
func measureLeaderLoss(t testing.TB, stopLeader func(d *daemon)) (time.Duration, []string, []string, []string) {
	t.Helper()
	m1, m2, m3 := threeMembers(t, "")
	load := startWrites(t, m2, "w")
	time.Sleep(time.Second)
	stopLeader(m1)
	time.Sleep(4 * time.Second)
	worst, acked, failed := load.finish()
	return worst, acked, missing(t, m3, acked), failed
}

// BenchmarkLeaderLoss is the `make bench` failover figure: the longest write stall when
// the database leader of three members is SIGKILLed under a write every 20 ms, and the
// acknowledged writes lost, over 5 runs; then the same with SIGTERM, which hands
// leadership over first.
func BenchmarkLeaderLoss(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, signal := range []string{"SIGKILL", "SIGTERM"} {
			var worst time.Duration
			var written, lost, failed int
			for run := 0; run < 5; run++ {
				stall, acked, missed, errs := measureLeaderLoss(b, func(d *daemon) {
					if signal == "SIGKILL" {
						d.Kill(b)
					} else {
						d.Stop(b)
					}
				})

				b.Logf("%s run %d: longest write %v, %d acknowledged, %d lost, %d failed %v", signal, run+1, stall, len(acked), len(missed), len(errs), errs)
				worst = max(worst, stall)
				written += len(acked)
				lost += len(missed)
				failed += len(errs)
			}

			fmt.Printf("leader %s under a write every 20 ms, 5 runs: longest write stall %v, %d writes acknowledged, %d lost, %d failed\n", signal, worst.Round(time.Millisecond), written, lost, failed)
			b.ReportMetric(float64(worst.Milliseconds()), signal+"-worst-stall-ms")
			b.ReportMetric(float64(lost), signal+"-lost-writes")
		}
	}
}
