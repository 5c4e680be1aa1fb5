package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// PrivateConfig configures a private door.
type PrivateConfig struct {
	// Dir holds the HAProxy's files: haproxy.cfg, haproxy.pid, admin.sock (runtime API),
	// master.sock (reloads), server-state, haproxy.log. Unix socket paths are limited to
	// 107 bytes, so keep it short (the daemon uses <state dir>/frontdoor).
	Dir string
	// Binary is the haproxy executable; "" finds haproxy on PATH, then /usr/sbin/haproxy.
	Binary string
	// Threads is HAProxy's nbthread; 0 is half the host's cores, at least one: the
	// front door shares its host with LXD's instances and the daemon (on a busy 2-core
	// host, one run of BenchmarkFrontDoor: 1835 req/s with one thread, 1146 with two).
	Threads int
	// Logger receives one line per start, adoption and reload; nil discards.
	Logger *slog.Logger
}

// Private is a HAProxy the daemon runs itself. It is started detached (master-worker,
// daemonized, its own session), so it outlives the daemon, a kill -9 included; a new
// Private on the same Dir adopts it through its pid file and sockets.
type Private struct {
	mu      sync.Mutex
	p       paths
	binary  string
	threads int
	log     *slog.Logger
	// known is the master pid this door started or adopted, so each is logged once.
	known int
}

var _ frontdoor.Door = (*Private)(nil)

// NewPrivate adopts the HAProxy running from cfg.Dir, or starts one with the last
// configuration written there (so a rebooted host serves its last picture until the
// daemon applies a new one) or with none.
func NewPrivate(ctx context.Context, cfg PrivateConfig) (*Private, error) {
	if cfg.Dir == "" {
		return nil, errors.New("private front door needs a directory: set PrivateConfig.Dir")
	}
	p := pathsIn(cfg.Dir)
	if len(p.Master) > 100 {
		return nil, fmt.Errorf("front door directory %s is too long for a unix socket path: use a shorter state directory", cfg.Dir)
	}
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("haproxy"); err != nil {
			bin = "/usr/sbin/haproxy"
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("haproxy not found at %s: install Debian's haproxy package (apt install haproxy) or set the binary: %w", bin, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create front door directory: %w", err)
	}
	threads := cfg.Threads
	if threads <= 0 {
		threads = max(1, runtime.NumCPU()/2)
	}
	d := &Private{p: p, binary: bin, threads: threads, log: log}
	if err := d.ensureRunning(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Pid is the HAProxy master's pid (0 when none runs).
func (d *Private) Pid() int {
	pid, _ := d.runningPid()
	return pid
}

// AdminSocket is the runtime API socket (level admin) of the private HAProxy.
func (d *Private) AdminSocket() string { return d.p.Admin }

// runningPid is the master's pid when its pid file names a live haproxy.
func (d *Private) runningPid() (int, bool) {
	b, err := os.ReadFile(d.p.Pid)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	// A reused pid must not be mistaken for our haproxy.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(d.p.Master)) {
		return 0, false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return 0, false
		}
	}
	return pid, true
}

// ensureRunning adopts or starts the HAProxy, and waits until its admin socket answers.
func (d *Private) ensureRunning(ctx context.Context) error {
	if pid, ok := d.runningPid(); ok {
		if d.known == pid {
			if _, err := command(ctx, d.p.Admin, "show info"); err == nil {
				return nil
			}
		}
		// One found running (a daemon restarted), or whose worker does not answer yet
		// (just reloaded), gets a moment, master and worker both.
		if err := d.waitAdmin(ctx, 0); err == nil {
			if d.known != pid {
				d.log.Info("front door: adopted running haproxy", "pid", pid, "dir", d.dirName())
				d.known = pid
			}
			return nil
		}
		return fmt.Errorf("haproxy %d runs from %s but its admin socket does not answer: stop it (kill %d) and the daemon starts a new one", pid, d.dirName(), pid)
	}
	cfg, err := os.ReadFile(d.p.Config)
	if err != nil || layoutOf(string(cfg)) == "" {
		if err := writeFileAtomic(d.p.Config, []byte(render(d.p, d.threads, nil))); err != nil {
			return err
		}
	}
	err = d.start(ctx)
	if err != nil && layoutOf(string(cfg)) != layout(nil) {
		// The last picture no longer starts (a listener's port taken meanwhile): start
		// empty, and the daemon's next Apply reloads into what it wants now.
		d.log.Warn("front door: haproxy refused its last configuration, starting empty", "err", err)
		if werr := writeFileAtomic(d.p.Config, []byte(render(d.p, d.threads, nil))); werr != nil {
			return errors.Join(err, werr)
		}
		err = d.start(ctx)
	}
	return err
}

// start runs haproxy from the configuration file and waits until it answers.
func (d *Private) start(ctx context.Context) error {
	logf, err := os.OpenFile(d.p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open haproxy log: %w", err)
	}
	defer logf.Close()
	// -W master-worker (reloads keep listeners), -D daemonized: the command returns once
	// the master runs in its own session, not a child tied to the daemon's life.
	cmd := exec.CommandContext(ctx, d.binary, "-W", "-D", "-S", d.p.Master+",mode,600", "-p", d.p.Pid, "-f", d.p.Config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	closeOnExec()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start haproxy from %s: %w (see %s)", d.p.Config, err, d.p.Log)
	}
	if err := d.waitAdmin(ctx, 0); err != nil {
		return err
	}
	d.known = d.Pid()
	d.log.Info("front door: started haproxy", "pid", d.known, "dir", d.dirName())
	return nil
}

func (d *Private) dirName() string { return strings.TrimSuffix(d.p.Config, "/haproxy.cfg") }

// waitAdmin waits until the admin socket answers, from worker pid when it is not 0, and
// the master lists its worker.
func (d *Private) waitAdmin(ctx context.Context, worker int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		out, err := command(ctx, d.p.Admin, "show info")
		if err == nil && (worker == 0 || strings.Contains(out, fmt.Sprintf("\nPid: %d\n", worker))) {
			// The worker answers before the master has finished starting (its signal
			// handlers, its socket): a reload or stop sent then would be lost.
			if proc, err := command(ctx, d.p.Master, "show proc"); err == nil {
				if _, _, err := parseShowProc(proc); err == nil {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("haproxy's admin socket %s does not answer: see %s", d.p.Admin, d.p.Log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Apply implements frontdoor.Door. Server changes go through the runtime API; a
// frontend coming, going or changing its listener reloads the HAProxy gracefully
// (the old worker finishes its connections, listeners are handed over).
func (d *Private) Apply(ctx context.Context, fs []frontdoor.Frontend) error {
	if err := validate(fs, true); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ensureRunning(ctx); err != nil {
		return err
	}
	want := map[string][]frontdoor.Server{}
	for _, f := range fs {
		want[backendName(f.Key)] = f.Servers
	}
	running, err := os.ReadFile(d.p.Config)
	if err != nil {
		return fmt.Errorf("read front door configuration: %w", err)
	}
	next := render(d.p, d.threads, fs)
	if layoutOf(string(running)) == layout(fs) {
		if err := reconcile(ctx, d.log, d.p.Admin, want, nil); err != nil {
			return err
		}
		return writeFileAtomic(d.p.Config, []byte(next))
	}
	// Before the reload, bring the backends that stay to the new picture so the state
	// file the new worker loads holds it.
	stay := map[string]bool{}
	for _, be := range backendsOf(string(running)) {
		if _, ok := want[be]; ok {
			stay[be] = true
		}
	}
	if err := reconcile(ctx, d.log, d.p.Admin, want, stay); err != nil {
		return err
	}
	if err := d.reload(ctx, running, []byte(next)); err != nil {
		return err
	}
	return reconcile(ctx, d.log, d.p.Admin, want, nil)
}

// reload checks next, saves the servers' state, writes next and reloads the master; a
// reload HAProxy refuses (a port already taken) puts the running file back.
func (d *Private) reload(ctx context.Context, running, next []byte) error {
	tmp := d.p.Config + ".next"
	if err := os.WriteFile(tmp, next, 0o600); err != nil {
		return fmt.Errorf("write front door configuration: %w", err)
	}
	defer os.Remove(tmp)
	if out, err := exec.CommandContext(ctx, d.binary, "-c", "-q", "-f", tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("haproxy refuses the front door configuration (a bug: report it): %v: %s", err, strings.TrimSpace(string(out)))
	}
	state, err := command(ctx, d.p.Admin, "show servers state")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(d.p.State, []byte(state)); err != nil {
		return err
	}
	proc, err := masterCommand(ctx, d.p.Master, "show proc")
	if err != nil {
		return err
	}
	oldWorker, failed, err := parseShowProc(proc)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(d.p.Config, next); err != nil {
		return err
	}
	restore := func(cause error) error {
		if err := writeFileAtomic(d.p.Config, running); err != nil {
			return errors.Join(cause, err)
		}
		return cause
	}
	// The master closes the connection as it re-executes, so there is no answer to read
	// and a read error says nothing: what show proc says next is the answer.
	_, _ = masterCommand(ctx, d.p.Master, "reload")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		proc, err := masterCommand(wctx, d.p.Master, "show proc")
		if err == nil {
			worker, nowFailed, perr := parseShowProc(proc)
			if nowFailed > failed {
				return restore(fmt.Errorf("haproxy refused the reload (a listener's port taken?): see %s", d.p.Log))
			}
			if perr == nil && worker != oldWorker {
				if err := d.waitAdmin(ctx, worker); err != nil {
					return err
				}
				d.log.Info("front door: reloaded haproxy", "worker", worker)
				return nil
			}
		}
		select {
		case <-wctx.Done():
			return restore(fmt.Errorf("haproxy did not finish reloading in 30s: see %s", d.p.Log))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stats implements frontdoor.Door.
func (d *Private) Stats(ctx context.Context) (map[string]frontdoor.FrontendStats, error) {
	return stats(ctx, d.p.Admin, keyOfBackend)
}

// Close implements frontdoor.Door: the HAProxy keeps running for the next daemon.
func (d *Private) Close() error { return nil }

// Stop stops the HAProxy: a soft stop (listeners close, open connections finish; an idle
// keep-alive connection is held until its 10 s timeout) and, when ctx ends first, a hard
// one.
func (d *Private) Stop(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	pid, ok := d.runningPid()
	if !ok {
		return nil
	}
	// The workers are told too: a master still starting loses the signal (the door waits
	// for the master to list its worker before using it, but Stop may meet one it did not
	// start).
	pids := []int{pid}
	if proc, err := command(ctx, d.p.Master, "show proc"); err == nil {
		pids = append(pids, parseWorkers(proc)...)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGUSR1)
	}
	for {
		if _, ok := d.runningPid(); !ok {
			_ = os.Remove(d.p.Pid)
			return nil
		}
		select {
		case <-ctx.Done():
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGTERM)
			}
			return fmt.Errorf("haproxy %d did not stop softly in time: sent it SIGTERM", pid)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeFileAtomic replaces path so a reader (haproxy at a reload) never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// masterCommand is command on the master socket, retried for a few seconds while nothing
// listens there: the master re-executes itself at each reload and binds its socket anew.
func masterCommand(ctx context.Context, socket, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		out, err := command(ctx, socket, cmd)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(20 * time.Millisecond):
		}
	}
}
