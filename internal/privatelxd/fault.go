package privatelxd

import (
	"fmt"
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

	return syscall.Kill(l.d.pid, syscall.SIGSTOP)
}

// Thaw resumes a frozen lxd with SIGCONT (harmless on one that is not frozen).
func (l *LXD) Thaw() error {
	if l.d.pid == 0 || l.d.hasExited() {
		return nil
	}

	return syscall.Kill(l.d.pid, syscall.SIGCONT)
}
