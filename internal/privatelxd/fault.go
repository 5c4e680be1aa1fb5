package privatelxd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Faults of the daemon itself, for tests that hold lxd-deployd to what it does when LXD
// falters: LXD's process goes away and comes back on the same LXD_DIR (a package upgrade,
// a crash), or stops answering for a while (frozen). Its containers keep running
// throughout: they are children of their own LXC monitors, not of lxd.

// Pid is the lxd process's id (0 before the first start).
func (l *LXD) Pid() int {
	return l.d.pid
}

// StopDaemon sends sig to the lxd process alone (not its process group) and waits until it
// has exited, SIGKILLing it after timeout. SIGTERM is what a package upgrade or an init
// system's restart sends: LXD 5.0 exits without stopping its instances (only SIGPWR and
// `lxd shutdown` stop them). SIGKILL is a crash.
func (l *LXD) StopDaemon(sig syscall.Signal, timeout time.Duration) error {
	d := l.d
	if d.pid == 0 || d.hasExited() {
		return fmt.Errorf("lxd in %s is not running", d.dir)
	}

	_ = syscall.Kill(d.pid, syscall.SIGCONT) // a frozen daemon cannot exit
	if err := syscall.Kill(d.pid, sig); err != nil {
		return fmt.Errorf("signal lxd (pid %d): %w", d.pid, err)
	}

	select {
	case <-d.exited:
		return nil
	case <-time.After(timeout):
	}

	_ = syscall.Kill(d.pid, syscall.SIGKILL)
	select {
	case <-d.exited:
		return fmt.Errorf("lxd (pid %d) did not exit within %v of %v; needed SIGKILL", d.pid, timeout, sig)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("lxd (pid %d) did not exit within 30s of SIGKILL", d.pid)
	}
}

// StartDaemon starts lxd again on the same LXD_DIR after [LXD.StopDaemon] and waits until
// it answers (`lxd waitready`). It finds the containers that kept running as they are.
func (l *LXD) StartDaemon() error {
	d := l.d
	if !d.hasExited() {
		return fmt.Errorf("lxd in %s is still running (pid %d)", d.dir, d.pid)
	}

	d.exited = make(chan struct{})
	d.err = nil
	if err := d.start(); err != nil {
		return err
	}

	if err := d.waitReady(); err != nil {
		return fmt.Errorf("%w%s", err, d.logTail())
	}

	return nil
}

// Freeze stops the lxd process with SIGSTOP: its socket still accepts connections (the
// kernel queues them), but nothing answers until [LXD.Thaw]. Its containers run on.
func (l *LXD) Freeze() error {
	if l.d.pid == 0 || l.d.hasExited() {
		return fmt.Errorf("lxd in %s is not running", l.d.dir)
	}

	err := syscall.Kill(l.d.pid, syscall.SIGSTOP)
	if err != nil {
		return err
	}

	// The signal is delivered to each thread as it is next scheduled: on a busy machine a
	// thread can still answer a request just after kill returns (TestFaults saw a frozen
	// LXD answer). Frozen is when every thread says it is stopped.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if allStopped(l.d.pid) {
			return nil
		}
	}

	return fmt.Errorf("lxd (pid %d) did not stop within 5s of SIGSTOP", l.d.pid)
}

// allStopped says whether every thread of pid is in state T (stopped) in /proc.
func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}

	for _, task := range tasks {
		stat, err := os.ReadFile(task)
		if err != nil {
			return false
		}

		// The state follows the command's closing parenthesis: "pid (comm) S ...".
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			return false
		}
	}

	return true
}

// Thaw resumes a frozen lxd with SIGCONT (harmless on one that is not frozen).
func (l *LXD) Thaw() error {
	if l.d.pid == 0 || l.d.hasExited() {
		return nil
	}

	return syscall.Kill(l.d.pid, syscall.SIGCONT)
}
