package privatelxd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
)

const (
	readyTimeout    = 60 * time.Second // lxd waitready
	shutdownTimeout = 30 * time.Second // lxd shutdown
	killTimeout     = 10 * time.Second // after SIGTERM, before SIGKILL
	maxSocketPath   = 107              // sizeof(sun_path) - 1
	dirPrefix       = "lxdt-"          // LXD_DIR is /tmp/lxdt-*
	ownerFile       = "owner"          // "<pid> <start time>" of the test binary
)

// daemon is a running `lxd` process and everything needed to tear it down.
type daemon struct {
	dir    string
	socket string
	pid    int
	exited chan struct{} // closed when the lxd process has exited
	err    error         // its exit status, valid once exited is closed

	// keep marks a directory kept across runs: stop shuts LXD down (which stops the
	// instances and remembers which ran, to start them again next time) and leaves it.
	keep bool
}

// launch starts and initialises a private daemon. On error everything it
// created is torn down again.
func launch() (l *LXD, err error) {
	// Not os.TempDir(): the socket path must stay under 108 bytes, and every
	// directory above LXD_DIR must be traversable by the containers'
	// unprivileged root (so no 0700 dirs such as t.TempDir()'s parents).
	sweepStale()
	dir, err := os.MkdirTemp("/tmp", dirPrefix)
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "unix.socket"), exited: make(chan struct{})}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, d.logTail())
			if serr := d.stop(); serr != nil {
				err = fmt.Errorf("%w\n(cleanup: %v)", err, serr)
			}
		}
	}()
	if len(d.socket) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s too long", d.socket)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	// An lxc config of its own, so that `lxc` neither touches $HOME nor
	// greets its first run with a banner in the output of [LXD.Lxc].
	if err := os.Mkdir(filepath.Join(dir, "lxc-conf"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "lxc-conf", "config.yml"), []byte("default-remote: local\n"), 0o600); err != nil {
		return nil, err
	}
	return d.bringUp()
}

// launchKept starts (or starts again) a private daemon whose state lives in dir across
// runs. Whatever a previous run that died left running out of dir is cleaned up first;
// a daemon still answering there is refused rather than disturbed.
func launchKept(dir string) (l *LXD, err error) {
	requested, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dir, relocated, err := placeKept(requested, RelocatedRoot)
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "unix.socket"), exited: make(chan struct{}), keep: true}
	if len(d.socket) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is too long for a unix socket: choose a shorter directory", d.socket)
	}
	if c, err := lxd.ConnectLXDUnix(d.socket, nil); err == nil {
		c.Disconnect()
		return nil, fmt.Errorf("an LXD is already running in %s (another lxd-deployd started it?): stop it first", dir)
	}
	killStragglers(dir)
	if err := unmountUnder(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "lxc-conf"), 0o700); err != nil {
		return nil, err
	}
	// Containers' unprivileged root must traverse it, as under /tmp.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "lxc-conf", "config.yml"), []byte("default-remote: local\n"), 0o600); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, d.logTail())
			if serr := d.stop(); serr != nil {
				err = fmt.Errorf("%w\n(cleanup: %v)", err, serr)
			}
		}
	}()
	l, err = d.bringUp()
	if err != nil {
		return nil, err
	}
	l.Requested, l.Relocated = requested, relocated
	return l, nil
}

// bringUp starts lxd on the prepared directory, waits for its API and sets it up: the
// common end of a fresh and of a kept daemon's launch.
func (d *daemon) bringUp() (*LXD, error) {
	if err := d.start(); err != nil {
		return nil, err
	}
	if err := d.waitReady(); err != nil {
		return nil, err
	}
	if err := d.setup(); err != nil {
		return nil, err
	}
	return &LXD{Dir: d.dir, Socket: d.socket, Requested: d.dir, d: d}, nil
}

// env returns the environment for lxd/lxc commands talking to this daemon.
// With client set, lxc's own config goes under dir too, not into $HOME.
func (d *daemon) env(client bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "LXD_DIR", "LXD_SOCKET", "LXD_CONF", "LXC_REMOTE":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LXD_DIR="+d.dir)
	if client {
		env = append(env, "LXD_CONF="+filepath.Join(d.dir, "lxc-conf"))
	}
	return env
}

// start runs `lxd` in the background.
//
// The daemon gets Pdeathsig=SIGKILL so that it dies with the test binary
// even if cleanup never runs. Pdeathsig fires when the *thread* that forked
// the child exits, so the fork happens on a goroutine that stays locked to
// its thread until the daemon has exited. It unlocks then rather than end the
// thread: a goroutine ending locked ends its thread, and with it (Pdeathsig
// again) every process another goroutine forked on that thread before it was
// locked, such as a daemon under test of a test running in parallel.
func (d *daemon) start() error {
	out, err := os.Create(filepath.Join(d.dir, "lxd.stderr"))
	if err != nil {
		return err
	}
	// LXD gets the usual umask, not its parent's: lxd-deployd runs under umask 077 (its own
	// files are private), which would leave LXD's directories closed to the containers'
	// unprivileged root and make every start fail. exec keeps the pid LXD's.
	cmd := exec.Command("sh", "-c", `umask 022 && exec lxd "$@"`, "lxd", "--group", "root", "--logfile", filepath.Join(d.dir, "lxd.log"))
	cmd.Env = d.env(false)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // once lxd has exited: the thread lives on
		defer out.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		d.pid = cmd.Process.Pid
		started <- nil
		d.err = cmd.Wait()
		close(d.exited)
	}()
	if err := <-started; err != nil {
		close(d.exited)
		return fmt.Errorf("start lxd: %w", err)
	}
	return nil
}

// waitReady runs `lxd waitready`, giving up early if the daemon dies.
func (d *daemon) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "lxd", "waitready", fmt.Sprintf("--timeout=%d", int(readyTimeout.Seconds())))
	cmd.Env = d.env(false)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		err = fmt.Errorf("lxd waitready: %v: %s", err, bytes.TrimSpace(out))
		select { // a dead daemon is the more useful news
		case <-d.exited:
			return fmt.Errorf("lxd exited during startup: %v (%w)", d.err, err)
		case <-time.After(time.Second):
			return err
		}
	case <-d.exited:
		cancel()
		<-done
		return fmt.Errorf("lxd exited during startup: %v", d.err)
	}
}

// setup creates the storage pool, points the default profile's root disk at
// it and imports the busybox image; what a kept directory already has is left as it is.
func (d *daemon) setup() error {
	c, err := lxd.ConnectLXDUnix(d.socket, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Disconnect()

	if _, _, err := c.GetStoragePool(Pool); err != nil {
		err = c.CreateStoragePool(api.StoragePoolsPost{Name: Pool, Driver: "dir"})
		if err != nil {
			return fmt.Errorf("create storage pool: %w", err)
		}
	}
	profile, etag, err := c.GetProfile("default")
	if err != nil {
		return fmt.Errorf("get default profile: %w", err)
	}
	put := profile.Writable()
	if put.Devices == nil {
		put.Devices = map[string]map[string]string{}
	}
	if put.Devices["root"]["pool"] != Pool {
		put.Devices["root"] = map[string]string{"type": "disk", "path": "/", "pool": Pool}
		if err := c.UpdateProfile("default", put, etag); err != nil {
			return fmt.Errorf("update default profile: %w", err)
		}
	}
	if _, _, err := c.GetImageAlias(Image); err == nil {
		return nil
	}
	return importImage(c)
}

// stop tears the daemon down and removes its directory. It is safe to call
// on a daemon that failed to start or has already died.
func (d *daemon) stop() error {
	var errs []error
	if d.pid != 0 && !d.hasExited() {
		if !d.keep {
			d.stopInstances()
		}
		if err := d.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	// Containers survive their daemon; kill whatever still runs out of dir
	// so that its mounts can go.
	killStragglers(d.dir)
	if err := unmountUnder(d.dir); err != nil {
		errs = append(errs, err)
	}
	if !d.keep {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (d *daemon) hasExited() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// stopInstances force-stops every running instance, in parallel, so that
// shutdown does not wait for instances whose init ignores SIGPWR. Best
// effort.
func (d *daemon) stopInstances() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	c, err := lxd.ConnectLXDUnixWithContext(ctx, d.socket, nil)
	if err != nil {
		return
	}
	defer c.Disconnect()
	projects, err := c.GetProjectNames()
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, project := range projects {
		pc := c.UseProject(project)
		insts, err := pc.GetInstances(api.InstanceTypeAny)
		if err != nil {
			continue
		}
		for _, inst := range insts {
			if inst.StatusCode != api.Running && inst.StatusCode != api.Frozen {
				continue
			}
			wg.Go(func() {
				op, err := pc.UpdateInstanceState(inst.Name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
				if err == nil {
					_ = op.WaitContext(ctx)
				}
			})
		}
	}
	wg.Wait()
}

// shutdown asks the daemon to exit, escalating to SIGTERM and SIGKILL
// (of its whole process group) if it does not.
func (d *daemon) shutdown() error {
	cmd := exec.Command("lxd", "shutdown", fmt.Sprintf("--timeout=%d", int(shutdownTimeout.Seconds())))
	cmd.Env = d.env(false)
	if err := cmd.Start(); err == nil {
		cmdDone := make(chan struct{})
		go func() { _ = cmd.Wait(); close(cmdDone) }()
		defer func() { // reap it; it exits right after the daemon
			select {
			case <-cmdDone:
			case <-time.After(killTimeout):
				_ = cmd.Process.Kill()
				<-cmdDone
			}
		}()
	}

	select {
	case <-d.exited:
		return nil
	case <-time.After(shutdownTimeout + 5*time.Second):
	}
	_ = syscall.Kill(-d.pid, syscall.SIGTERM)
	select {
	case <-d.exited:
		return fmt.Errorf("lxd did not shut down within %v; needed SIGTERM", shutdownTimeout)
	case <-time.After(killTimeout):
	}
	_ = syscall.Kill(-d.pid, syscall.SIGKILL)
	<-d.exited
	return fmt.Errorf("lxd did not shut down within %v; needed SIGKILL", shutdownTimeout+killTimeout)
}

// logTail returns the last lines of the daemon's log and stderr, formatted
// for appending to an error message.
func (d *daemon) logTail() string {
	var b strings.Builder
	for _, name := range []string{"lxd.log", "lxd.stderr"} {
		data, err := os.ReadFile(filepath.Join(d.dir, name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "\n--- tail of %s ---\n%s", name, strings.Join(lines, "\n"))
	}
	return b.String()
}

// writeOwner records which process owns dir, for [sweepStale].
func writeOwner(dir string) error {
	self, ok := readProcess(os.Getpid())
	if !ok {
		return fmt.Errorf("cannot read /proc/self/stat")
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprintf("%d %s\n", self.pid, self.start)), 0o644)
}

// sweepStale tears down daemon directories whose test binary died without
// cleaning up (killed, or `go test -timeout` expired): Pdeathsig took their
// daemon down, but not its containers, mounts and files.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
	for _, dir := range dirs {
		var pid int
		var start string
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or being created right now
		}
		if _, err := fmt.Sscan(string(owner), &pid, &start); err != nil {
			continue
		}
		if p, ok := readProcess(pid); ok && !p.zombie && p.start == start {
			continue // owner still running
		}
		_ = (&daemon{dir: dir}).stop()
	}
}

// killStragglers kills what a dead daemon left running (or a stale daemon
// itself). It SIGKILLs the init of every container whose LXC monitor names
// dir, which takes the container's whole PID namespace with it, gives the
// monitors a moment to clean up after their container, then SIGKILLs any
// monitor still there.
func killStragglers(dir string) {
	var monitors []int
	for _, p := range processes() {
		switch {
		case strings.HasPrefix(p.cmdline, "[lxc monitor] "+dir+"/"):
			monitors = append(monitors, p.pid)
		case strings.HasPrefix(p.cmdline, "lxd ") && strings.Contains(p.cmdline, " "+dir+"/lxd.log"):
			_ = syscall.Kill(p.pid, syscall.SIGKILL) // a daemon that outlived its test binary
		}
	}
	if len(monitors) == 0 {
		return
	}
	for _, p := range processes() {
		if slices.Contains(monitors, p.ppid) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		monitors = slices.DeleteFunc(monitors, func(pid int) bool { return !alive(pid) })
		if len(monitors) == 0 {
			return
		}
	}
	for _, pid := range monitors {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

type process struct {
	pid, ppid int
	cmdline   string // arguments joined by spaces
	start     string // start time in clock ticks since boot
	zombie    bool
}

// processes lists the processes in /proc, skipping any that vanish.
func processes() []process {
	entries, _ := os.ReadDir("/proc")
	var ps []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProcess(pid); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func readProcess(pid int) (process, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return process{}, false
	}
	// pid (comm) state ppid ... with starttime the 22nd field overall;
	// comm may contain spaces and parentheses, so split after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return process{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return process{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return process{
		pid:     pid,
		ppid:    ppid,
		cmdline: strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " "),
		start:   f[19],
		zombie:  f[0] == "Z" || f[0] == "X",
	}, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	p, ok := readProcess(pid)
	return ok && !p.zombie
}

// unmountUnder lazily unmounts every mount point at or below dir, deepest
// first, until none is left. LXD mounts e.g. dir/shmounts and dir/devlxd
// in the host's mount namespace and does not always undo that.
func unmountUnder(dir string) error {
	for attempt := 0; ; attempt++ {
		mounts, err := mountsUnder(dir)
		if err != nil || len(mounts) == 0 {
			return err
		}
		if attempt == 5 {
			return fmt.Errorf("still mounted: %s", strings.Join(mounts, ", "))
		}
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, sc.Err()
}

// unescapeMountinfo undoes the \ooo octal escapes of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
