package backend

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestKillChecksByMarker kills the processes carrying any of the markers in their
// environment, and leaves a process with another marker alone.
func TestKillChecksByMarker(t *testing.T) {
	start := func(marker string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), CheckMarkerEnv+"="+marker)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}

	a, b, other := start("s23-a"), start("s23-b"), start("s23-other")
	if killed := KillChecks([]string{"s23-a", "s23-b", "s23-none"}); killed != 2 {
		t.Fatalf("killed %d, want 2", killed)
	}

	for _, cmd := range []*exec.Cmd{a, b} {
		state, err := cmd.Process.Wait()
		if err != nil || state.Success() {
			t.Fatalf("a marked process was not killed: %v %v", state, err)
		}
	}

	done := make(chan struct{})
	go func() { _, _ = other.Process.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("the process with another marker was killed")
	case <-time.After(200 * time.Millisecond):
	}
}
