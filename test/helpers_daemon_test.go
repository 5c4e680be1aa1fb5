package test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/canonical/lxd/shared"

	lxdapi "github.com/canonical/lxd/shared/api"

	lxd "github.com/canonical/lxd/client"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// daemon is a running lxd-deployd started by a test.
type daemon struct {
	DataDir        string
	Socket         string
	HTTPSAddress   string
	ClusterAddress string // with daemonOptions.Cluster: its --cluster-address
	LXDSocket      string
	ServerCert     string // PEM
	Fingerprint    string

	cmd       *exec.Cmd
	log       string
	fileLimit int // daemonOptions.FileLimit, kept for restarts

	memoryLimit int64 // daemonOptions.MemoryLimit, kept for restarts

	netNS string // daemonOptions.NetNS, kept for restarts
}

// daemonOptions tweak how a test daemon starts.
type daemonOptions struct {
	// LXDSocket is the LXD the daemon uses; empty means a path where no LXD answers.
	LXDSocket string

	// ExtraArgs are added to the command line.
	ExtraArgs []string

	// Files are written into the data directory before the first start.
	Files map[string][]byte

	// Cluster gives the daemon a --cluster-address on a free loopback port
	// (daemon.ClusterAddress), for dqlite to listen on.
	Cluster bool

	// FileLimit, when set, is the daemon's own RLIMIT_NOFILE (soft and hard, set with
	// prlimit on the daemon's process alone): connection-exhaustion tests never touch the
	// machine's.
	FileLimit int

	// MemoryLimit, when set, puts the daemon's process alone in a memory cgroup (v1) of
	// that many bytes, so that a hostile-input test that finds a leak gets the daemon
	// killed, not the machine short of memory.
	MemoryLimit int64

	// NetNS, when set, is the path of a network namespace (/run/netns/NAME) the daemon runs
	// in (nsenter --net, which execs it: the process is the daemon's), and Host an address
	// of that namespace for its --https-address and --cluster-address: cutting the
	// namespace's link cuts the member off (test/lxdtest's Partition). Its unix socket and
	// LXD's are files, reached as usual; its HTTPS address is not reachable from the test.
	NetNS string
	Host  string
}

// bindAttempts is how many fresh ports startDaemon tries. freePort's port is free when it
// answers but released before the daemon binds it; another process (the tests of other
// packages, any outgoing connection's ephemeral port) can take it meanwhile, and then
// the daemon exits with "address already in use" (dqlite: "failed to set bind address").
const bindAttempts = 5

// startDaemon starts lxd-deployd on a fresh data directory and waits until it answers.
// It is stopped (SIGTERM) when the test ends.
func startDaemon(t testing.TB, opts daemonOptions) *daemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "ldd-")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	lxdSocket := opts.LXDSocket
	if lxdSocket == "" {
		lxdSocket = filepath.Join(dir, "no-lxd.socket")
	}

	for attempt := 1; ; attempt++ {
		d := &daemon{
			DataDir:      dir,
			Socket:       filepath.Join(dir, "unix.socket"),
			HTTPSAddress: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			LXDSocket:    lxdSocket,
			log:          filepath.Join(dir, "daemon.log"),
			fileLimit:    opts.FileLimit,
			memoryLimit:  opts.MemoryLimit,
			netNS:        opts.NetNS,
		}

		host := "127.0.0.1"
		if opts.Host != "" {
			host = opts.Host
			d.HTTPSAddress = net.JoinHostPort(host, strconv.Itoa(freePort(t)))
		}

		for name, content := range opts.Files {
			err = os.WriteFile(filepath.Join(dir, name), content, 0o600)
			if err != nil {
				t.Fatal(err)
			}
		}

		args := opts.ExtraArgs
		if opts.Cluster {
			d.ClusterAddress = net.JoinHostPort(host, strconv.Itoa(freePort(t)))
			args = append([]string{"--cluster-address", d.ClusterAddress}, args...)
		}

		exited := d.tryStart(t, args...)
		if !exited {
			t.Cleanup(func() { d.Stop(t) })
			return d
		}

		// Lost a port to someone else between freePort and the bind: start afresh (the
		// data directory too, which may name the address already) with new ports.
		log := d.Log()
		if attempt == bindAttempts || !strings.Contains(log, "address already in use") && !strings.Contains(log, "failed to set bind address") {
			t.Fatalf("lxd-deployd exited before answering:\n%s", log)
		}

		t.Logf("lxd-deployd lost a port before binding it (attempt %d), retrying with fresh ports", attempt)
		entries, _ := os.ReadDir(dir)
		for _, entry := range entries {
			_ = os.RemoveAll(filepath.Join(dir, entry.Name()))
		}
	}
}

// start runs the binary and waits for its socket to answer.
func (d *daemon) start(t testing.TB, extraArgs ...string) {
	t.Helper()
	if d.tryStart(t, extraArgs...) {
		t.Fatalf("lxd-deployd exited before answering:\n%s", d.Log())
	}
}

// tryStart runs the binary and waits for its socket to answer; it reports whether the
// daemon exited first instead (its log says why).
func (d *daemon) tryStart(t testing.TB, extraArgs ...string) bool {
	t.Helper()
	logFile, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}

	args := append([]string{"--data-dir", d.DataDir, "--https-address", d.HTTPSAddress, "--lxd-socket", d.LXDSocket, "--lxd-poll-interval", "500ms", "--debug"}, extraArgs...)
	d.cmd = exec.Command(daemonBinary, args...)
	if d.fileLimit > 0 {
		// prlimit sets the limit on itself and execs the daemon: the same process.
		d.cmd = exec.Command("prlimit", append([]string{fmt.Sprintf("--nofile=%d:%d", d.fileLimit, d.fileLimit), daemonBinary}, args...)...)
	}

	if d.netNS != "" {
		d.cmd = exec.Command("nsenter", append([]string{"--net=" + d.netNS, daemonBinary}, args...)...)
	}

	d.cmd.Stdout = logFile
	d.cmd.Stderr = logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = d.cmd.Start()
	_ = logFile.Close()
	if err != nil {
		t.Fatal(err)
	}

	if d.memoryLimit > 0 {
		limitMemory(t, d.cmd.Process.Pid, d.memoryLimit)
	}

	exited := make(chan struct{})
	go func(cmd *exec.Cmd) {
		// Reaps the process only once it has exited (WNOWAIT leaves it for cmd.Wait), so
		// that a daemon that dies at start-up is seen at once, not after 30 s.
		var info [128]byte
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(cmd.Process.Pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|0x1000000 /* WNOWAIT */, 0, 0)
			if errno != syscall.EINTR {
				close(exited)
				return
			}
		}
	}(d.cmd)

	answered := false
	waitUntil(t, "lxd-deployd answering", 30*time.Second, func() bool {
		c, err := client.ConnectUnix(d.Socket, nil)
		if err == nil {
			server, _, err := c.GetServer()
			if err == nil && server.Environment != nil {
				d.ServerCert = server.Environment.Certificate
				d.Fingerprint = server.Environment.CertificateFingerprint
				answered = true
				return true
			}
		}

		select {
		case <-exited:
			return true
		default:
			return false
		}
	}, every(50*time.Millisecond), withLog(d.Log))
	if answered {
		return false
	}

	_ = d.cmd.Wait()
	d.cmd = nil
	return true
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *daemon) Stop(t testing.TB) {
	t.Helper()
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}

	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lxd-deployd did not exit cleanly: %v\n%s", err, d.Log())
		}
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
		t.Errorf("lxd-deployd did not stop within 30s of SIGTERM\n%s", d.Log())
	}

	d.cmd = nil
}

// Restart stops and starts the daemon on the same data directory.
func (d *daemon) Restart(t testing.TB) {
	t.Helper()
	d.Stop(t)
	d.start(t)
}

// Log returns what the daemon logged so far.
func (d *daemon) Log() string {
	data, _ := os.ReadFile(d.log)
	return string(data)
}

// Unix returns a client over the admin unix socket.
func (d *daemon) Unix(t testing.TB) *client.Server {
	t.Helper()
	c, err := client.ConnectUnix(d.Socket, nil)
	if err != nil {
		t.Fatal(err)
	}

	return c
}

// HTTPS returns a client over HTTPS presenting the given identity (nil: no certificate).
func (d *daemon) HTTPS(t testing.TB, id *identity) *client.Server {
	t.Helper()
	args := &client.ConnectionArgs{TLSServerCert: d.ServerCert}
	if id != nil {
		args.TLSClientCert = id.CertPEM
		args.TLSClientKey = id.KeyPEM
	}

	c, err := client.ConnectHTTPS("https://"+d.HTTPSAddress, args)
	if err != nil {
		t.Fatal(err)
	}

	return c
}

// LXDClient returns LXD's own Go client over HTTPS presenting the given identity: the
// daemon must serve it as LXD would.
func (d *daemon) LXDClient(t testing.TB, id *identity) lxd.InstanceServer {
	t.Helper()
	c, err := lxd.ConnectLXD("https://"+d.HTTPSAddress, &lxd.ConnectionArgs{TLSServerCert: d.ServerCert, TLSClientCert: id.CertPEM, TLSClientKey: id.KeyPEM})
	must(t, err)
	return c
}

// onLifecycle trusts a new client certificate named name and calls handle with every
// lifecycle event the daemon's /1.0/events shows it, read with LXD's own client, until the
// test ends.
func (d *daemon) onLifecycle(t testing.TB, name string, handle func(lxdapi.EventLifecycle)) {
	t.Helper()
	id := newIdentity(t)
	trustIdentity(t, d.Unix(t), id, name, "client")
	listener, err := d.LXDClient(t, id).GetEvents()
	must(t, err)
	t.Cleanup(listener.Disconnect)
	_, err = listener.AddHandler([]string{"lifecycle"}, func(e lxdapi.Event) {
		var lifecycle lxdapi.EventLifecycle
		if json.Unmarshal(e.Metadata, &lifecycle) == nil {
			handle(lifecycle)
		}
	})
	must(t, err)
}

// identity is a client key pair.
type identity struct {
	CertPEM     string
	KeyPEM      string
	Fingerprint string
}

// newIdentity generates a client certificate the way lxc does.
func newIdentity(t testing.TB) *identity {
	t.Helper()
	certPEM, keyPEM, err := shared.GenerateMemCert(true, shared.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}

	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	return &identity{CertPEM: string(certPEM), KeyPEM: string(keyPEM), Fingerprint: auth.Fingerprint(cert)}
}

// freePort returns a TCP port nothing listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port
}

// serverEnvironment returns the daemon's GET /1.0 environment over the unix socket.
func serverEnvironment(t testing.TB, d *daemon) *api.ServerEnvironment {
	t.Helper()
	server, _, err := d.Unix(t).GetServer()
	if err != nil {
		t.Fatal(err)
	}

	return server.Environment
}

// Kill stops the daemon with SIGKILL, as a crash would, leaving its data as it is.
func (d *daemon) Kill(t testing.TB) {
	t.Helper()
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}

	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	d.cmd = nil
}

// Start starts a stopped or killed daemon again on the same data directory.
func (d *daemon) Start(t testing.TB, extraArgs ...string) {
	t.Helper()
	d.start(t, extraArgs...)
}

// trustIdentity adds an identity's certificate to the trust store with a type.
func trustIdentity(t testing.TB, admin *client.Server, id *identity, name string, certType string) {
	t.Helper()
	must(t, admin.CreateCertificate(lxdapi.CertificatesPost{Name: name, Type: certType, Certificate: id.CertPEM}))
}

func waitLXDOnline(t testing.TB, d *daemon) {
	t.Helper()
	waitUntil(t, "the daemon connected to the private LXD", 20*time.Second, func() bool {
		return serverEnvironment(t, d).LXDStatus == "online"
	}, every(50*time.Millisecond), withLog(d.Log))
}

// waitExit waits for a daemon to exit by itself.
func waitExit(t *testing.T, d *daemon, timeout time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		d.cmd = nil
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, d.Log())
		}
	case <-time.After(timeout):
		t.Fatalf("the daemon did not exit within %s\n%s", timeout, d.Log())
	}
}

// daemonRSS is the daemon's resident memory in bytes (/proc/PID/status VmRSS).
func daemonRSS(t testing.TB, d *daemon) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/status")
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			must(t, err)
			return kb << 10
		}
	}

	t.Fatal("no VmRSS")
	return 0
}

// limitMemory moves a process into a memory cgroup (v1) of its own limited to limit bytes;
// the cgroup is removed when the test ends (after the process stopped).
func limitMemory(t testing.TB, pid int, limit int64) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("lxd-deployd-test-%d", pid))
	err := os.Mkdir(dir, 0o755)
	if err != nil {
		t.Fatalf("a memory cgroup for the daemon (needs root and cgroup v1's memory controller): %v", err)
	}

	t.Cleanup(func() { _ = os.Remove(dir) })
	for file, value := range map[string]int64{"memory.limit_in_bytes": limit, "cgroup.procs": int64(pid)} {
		err = os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(value, 10)), 0o644)
		if err != nil {
			t.Fatalf("%s of the daemon's memory cgroup: %v", file, err)
		}
	}
}
