package test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterMemberWithoutQuorumStops kills two of three members and stops the third: with
// no quorum it cannot hand its database role over, and it must still exit promptly (doc/
// clustering.md, "Stopping a member"), saying what it could not hand over.
func TestClusterMemberWithoutQuorumStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three daemons: skipped in -short mode")
	}

	m1, m2, m3 := threeMembers(t, "")
	m1.Kill(t)
	m2.Kill(t)

	// Let m3 notice: its log repeats "no known leader" from here on.
	time.Sleep(2 * time.Second)

	start := time.Now()
	must(t, m3.cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- m3.cmd.Wait() }()
	select {
	case err := <-done:
		m3.cmd = nil
		took := time.Since(start)
		t.Logf("the member without quorum stopped %s after SIGTERM", took.Round(10*time.Millisecond))
		if err != nil {
			t.Fatalf("a member without quorum must exit cleanly: %v\n%s", err, m3.Log())
		}

		if took > 10*time.Second {
			t.Fatalf("the member without quorum took %s to stop, want at most 10s\n%s", took, m3.Log())
		}
	case <-time.After(30 * time.Second):
		_ = m3.cmd.Process.Kill()
		<-done
		m3.cmd = nil
		t.Fatalf("the member without quorum did not stop within 30s of SIGTERM\n%s", m3.Log())
	}

	log := m3.Log()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "could not hand over") {
			t.Log(line)
			return
		}
	}

	t.Fatalf("the log must say what the member could not hand over:\n%s", log)
}
