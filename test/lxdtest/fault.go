package lxdtest

import (
	"syscall"
	"testing"
	"time"
)

// Faults of a private LXD's own daemon (see README.md, "Faults"). Its containers keep
// running through each of them; tests hold a daemon under test to what it does meanwhile.

// Pid is the private LXD's lxd process id.
func (l *LXD) Pid() int {
	return l.p.Pid()
}

// Restart stops the private LXD's daemon the way a package upgrade does (SIGTERM: LXD
// exits and leaves its instances running), waits down, and starts it again on the same
// LXD_DIR; it returns once LXD answers again, and how long LXD was gone.
func (l *LXD) Restart(t testing.TB, down time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	l.StopDaemon(t)
	time.Sleep(down)
	l.StartDaemon(t)
	return time.Since(began)
}

// StopDaemon stops the daemon with SIGTERM (its instances keep running) and waits until
// it has exited; see [LXD.StartDaemon].
func (l *LXD) StopDaemon(t testing.TB) {
	t.Helper()
	if err := l.p.StopDaemon(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("lxdtest: stop lxd: %v", err)
	}
}

// KillDaemon SIGKILLs the daemon, as a crash would (its instances keep running), and waits
// until it has exited; see [LXD.StartDaemon].
func (l *LXD) KillDaemon(t testing.TB) {
	t.Helper()
	if err := l.p.StopDaemon(syscall.SIGKILL, 30*time.Second); err != nil {
		t.Fatalf("lxdtest: kill lxd: %v", err)
	}
}

// StartDaemon starts the daemon again on the same LXD_DIR and waits until it answers.
func (l *LXD) StartDaemon(t testing.TB) {
	t.Helper()
	if err := l.p.StartDaemon(); err != nil {
		t.Fatalf("lxdtest: start lxd again: %v", err)
	}
}

// Freeze stops the daemon with SIGSTOP: calls to it hang (connections are accepted by the
// kernel, nothing answers) until [LXD.Thaw]. The test's cleanup thaws it, so that the
// LXD's own cleanup can shut it down.
func (l *LXD) Freeze(t testing.TB) {
	t.Helper()
	if err := l.p.Freeze(); err != nil {
		t.Fatalf("lxdtest: freeze lxd: %v", err)
	}

	t.Cleanup(func() { _ = l.p.Thaw() })
}

// Thaw resumes a frozen daemon (SIGCONT).
func (l *LXD) Thaw(t testing.TB) {
	t.Helper()
	if err := l.p.Thaw(); err != nil {
		t.Fatalf("lxdtest: thaw lxd: %v", err)
	}
}
