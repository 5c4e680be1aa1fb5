package lxdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
)

// clusterPrefix names a cluster's directory (/tmp/lxdc-*) and its network namespace.
const clusterPrefix = "lxdc-"

// clusterPort is the one port every member listens on, each on its own loopback address.
const clusterPort = 8443

// ClusterOptions says what cluster [StartCluster] forms.
type ClusterOptions struct {
	// Members is how many LXD members to run (default 3), named m1, m2, ...
	Members int

	// OfflineThreshold is LXD's cluster.offline_threshold in seconds (default 11, LXD's
	// minimum is 10): how long after its last heartbeat a killed member shows offline.
	OfflineThreshold int

	// Groups are LXD cluster groups to create: name -> member names.
	Groups map[string][]string

	// OwnSysfs runs each member in a mount namespace of its own with a sysfs of the
	// cluster's network namespace on /sys (the host's cgroup tree moved onto it), so that
	// LXD finds the namespace's interfaces there: a bridge the test makes in the namespace
	// for bridged NICs. Without it LXD sees the host's /sys and refuses any NIC.
	OwnSysfs bool
}

// Cluster is a private LXD cluster: every member in one network namespace that has only
// loopback (so nothing a member sends leaves the machine), member N on 127.0.0.(N+1), each
// with its own LXD_DIR and a "dir" pool named "default", the busybox image imported once.
// The tests reach member 1 through its unix socket from the host's namespace.
type Cluster struct {
	Dir     string // /tmp/lxdc-*: one LXD_DIR per member below it
	NetNS   string // the namespace's name (/run/netns/NetNS)
	Members []*Member

	ownSysfs bool
}

// Member is one LXD member of a [Cluster].
type Member struct {
	Name    string // m1, m2, ...
	Address string // 127.0.0.N:8443 inside the namespace
	Dir     string // LXD_DIR
	Socket  string // Dir + "/unix.socket"

	cluster *Cluster
	mu      sync.Mutex
	pid     int
	exited  chan struct{}
}

// StartCluster forms a private LXD cluster (see [Cluster]) and removes it, namespace and
// all, when the test ends. The test is skipped if [Available] says no, or if network
// namespaces cannot be made here.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	skipUnlessAvailable(t)
	if opts.Members == 0 {
		opts.Members = 3
	}
	if opts.OfflineThreshold == 0 {
		opts.OfflineThreshold = 11
	}
	sweepStaleClusters()
	dir, err := os.MkdirTemp("/tmp", clusterPrefix)
	if err != nil {
		t.Fatalf("lxdtest: %v", err)
	}
	c := &Cluster{Dir: dir, NetNS: filepath.Base(dir), ownSysfs: opts.OwnSysfs}
	t.Cleanup(func() {
		if err := c.remove(); err != nil {
			t.Errorf("lxdtest: cleanup of cluster %s: %v", c.Dir, err)
		}
	})
	if err := c.form(opts); err != nil {
		t.Fatalf("lxdtest: form cluster: %v%s", err, c.logTails())
	}
	return c
}

// form makes the namespace and the members, bootstraps member 1, joins the others, then
// imports the image and creates the groups.
func (c *Cluster) form(opts ClusterOptions) error {
	// Containers' unprivileged root must traverse every parent of an LXD_DIR.
	if err := os.Chmod(c.Dir, 0o711); err != nil {
		return err
	}
	if err := writeClusterOwner(c.Dir); err != nil {
		return err
	}
	if out, err := exec.Command("ip", "netns", "add", c.NetNS).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %v: %s", c.NetNS, err, out)
	}
	if out, err := exec.Command("ip", "-n", c.NetNS, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("bring up lo in %s: %v: %s", c.NetNS, err, out)
	}
	for i := 1; i <= opts.Members; i++ {
		m := &Member{
			Name:    fmt.Sprintf("m%d", i),
			Address: fmt.Sprintf("127.0.0.%d:%d", i+1, clusterPort),
			cluster: c,
		}
		m.Dir = filepath.Join(c.Dir, m.Name)
		m.Socket = filepath.Join(m.Dir, "unix.socket")
		if err := os.Mkdir(m.Dir, 0o711); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(m.Dir, "lxc-conf"), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(m.Dir, "lxc-conf", "config.yml"), []byte("default-remote: local\n"), 0o600); err != nil {
			return err
		}
		c.Members = append(c.Members, m)
	}
	// Members start in parallel: the daemon start is most of the time.
	var wg sync.WaitGroup
	errs := make([]error, len(c.Members))
	for i, m := range c.Members {
		wg.Go(func() {
			if errs[i] = m.start(); errs[i] == nil {
				errs[i] = m.waitReady()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}

	first := c.Members[0]
	bootstrap := fmt.Sprintf(`config:
  core.https_address: %[1]s
  cluster.https_address: %[1]s
cluster:
  server_name: %[2]s
  enabled: true
storage_pools:
- name: %[3]s
  driver: dir
profiles:
- name: default
  devices:
    root:
      path: /
      pool: %[3]s
      type: disk
`, first.Address, first.Name, Pool)
	if out, err := first.run([]byte(bootstrap), "lxd", "init", "--preseed"); err != nil {
		return fmt.Errorf("bootstrap %s: %v: %s", first.Name, err, out)
	}
	client, err := lxd.ConnectLXDUnix(first.Socket, nil)
	if err != nil {
		return err
	}
	defer client.Disconnect()
	// Cluster-wide keys: LXD 5.0 drops the connection when a preseed sets them on a server
	// that is not clustered yet.
	server, etag, err := client.GetServer()
	if err != nil {
		return err
	}
	put := server.Writable()
	put.Config["cluster.offline_threshold"] = fmt.Sprint(opts.OfflineThreshold)
	put.Config["images.auto_update_interval"] = "0"
	if err := client.UpdateServer(put, etag); err != nil {
		return fmt.Errorf("set cluster.offline_threshold: %w", err)
	}
	for i, m := range c.Members[1:] {
		// A member that just joined is not online until its first heartbeat, and LXD will
		// not issue a join token meanwhile ("There are no online cluster members"); a busy
		// machine makes that take seconds.
		err := waitOnline(client, i+1, time.Minute)
		if err != nil {
			return fmt.Errorf("before joining %s: %w", m.Name, err)
		}

		var op lxd.Operation
		Poll(time.Minute, 500*time.Millisecond, func() bool {
			op, err = client.CreateClusterMember(api.ClusterMembersPost{ServerName: m.Name})
			return err == nil
		})

		if err != nil {
			return fmt.Errorf("join token for %s: %w", m.Name, err)
		}

		opAPI := op.Get()
		token, err := opAPI.ToClusterJoinToken()
		if err != nil {
			return fmt.Errorf("join token for %s: %w", m.Name, err)
		}
		join := fmt.Sprintf(`cluster:
  enabled: true
  server_name: %s
  server_address: %s
  cluster_token: %s
  member_config:
  - entity: storage-pool
    name: %s
    key: source
    value: ""
`, m.Name, m.Address, token.String(), Pool)
		// Joins go one at a time: LXD refuses a join while another is under way.
		if out, err := m.run([]byte(join), "lxd", "init", "--preseed"); err != nil {
			return fmt.Errorf("join %s: %v: %s", m.Name, err, out)
		}
	}
	if err := waitOnline(client, len(c.Members), time.Minute); err != nil {
		return err
	}

	if err := privatelxd.ImportImage(client); err != nil {
		return err
	}
	for group, members := range opts.Groups {
		err := client.CreateClusterGroup(api.ClusterGroupsPost{
			ClusterGroupPut: api.ClusterGroupPut{Members: members},
			Name:            group,
		})
		if err != nil {
			return fmt.Errorf("create cluster group %s: %w", group, err)
		}
	}
	return nil
}

// waitOnline waits until LXD lists n members, all online.
func waitOnline(client lxd.InstanceServer, n int, timeout time.Duration) error {
	var err error
	online := 0
	if Poll(timeout, 250*time.Millisecond, func() bool {
		var members []api.ClusterMember
		members, err = client.GetClusterMembers()
		online = 0
		for _, m := range members {
			if m.Status == "Online" {
				online++
			}
		}

		return err == nil && online == n && len(members) == n
	}) {
		return nil
	}

	return fmt.Errorf("%d of %d cluster members online after %v (%v)", online, n, timeout, err)
}

// Member returns the member named name; it fails the test when there is none.
func (c *Cluster) Member(t testing.TB, name string) *Member {
	t.Helper()
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("lxdtest: cluster has no member %q", name)
	return nil
}

// Socket is member 1's unix socket: what a daemon under test connects to.
func (c *Cluster) Socket() string {
	return c.Members[0].Socket
}

// Client returns a client of member 1, through its unix socket.
func (c *Cluster) Client(t testing.TB) lxd.InstanceServer {
	t.Helper()
	return c.Members[0].Client(t)
}

// Client returns a client of this member, through its unix socket.
func (m *Member) Client(t testing.TB) lxd.InstanceServer {
	t.Helper()
	cl, err := lxd.ConnectLXDUnix(m.Socket, nil)
	if err != nil {
		t.Fatalf("lxdtest: connect to %s: %v", m.Socket, err)
	}
	return cl
}

// Lxc runs the lxc client against this member, inside the cluster's namespace (an lxc
// command may make the member dial the others), and returns its combined output.
func (m *Member) Lxc(t testing.TB, args ...string) string {
	t.Helper()
	out, err := m.run(nil, append([]string{"lxc"}, args...)...)
	if err != nil {
		t.Fatalf("lxdtest: lxc %q on %s: %v\n%s", args, m.Name, err, out)
	}
	return string(out)
}

// Locations lists the instances whose names start with prefix, name -> the member LXD
// says each is on, as member 1 sees them.
func (c *Cluster) Locations(t testing.TB, prefix string) map[string]string {
	t.Helper()
	cl := c.Client(t)
	defer cl.Disconnect()
	insts, err := cl.GetInstances(api.InstanceTypeAny)
	if err != nil {
		t.Fatalf("lxdtest: list instances: %v", err)
	}
	locations := map[string]string{}
	for _, inst := range insts {
		if strings.HasPrefix(inst.Name, prefix) {
			locations[inst.Name] = inst.Location
		}
	}
	return locations
}

// MemberStatus is the status member 1 reports for the named member ("Online", "Offline",
// "Evacuated", ...).
func (c *Cluster) MemberStatus(t testing.TB, name string) string {
	t.Helper()
	cl := c.Client(t)
	defer cl.Disconnect()
	member, _, err := cl.GetClusterMember(name)
	if err != nil {
		t.Fatalf("lxdtest: cluster member %s: %v", name, err)
	}
	return member.Status
}

// WaitMemberStatus waits until member 1 reports the named member in status, and returns
// how long that took.
func (c *Cluster) WaitMemberStatus(t testing.TB, name, status string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var got string
	if !Poll(timeout, 200*time.Millisecond, func() bool {
		got = c.MemberStatus(t, name)
		return got == status
	}) {
		t.Fatalf("lxdtest: member %s still %s after %v, want %s", name, got, timeout, status)
	}

	return time.Since(start)
}

// Kill SIGKILLs the member's LXD (its containers keep running, as on a machine whose
// daemon crashed) and waits until the process is gone, not merely a zombie.
func (m *Member) Kill(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	pid, exited := m.pid, m.exited
	m.mu.Unlock()
	if pid == 0 {
		t.Fatalf("lxdtest: %s is not running", m.Name)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("lxdtest: %s (pid %d) did not die within 30s of SIGKILL", m.Name, pid)
	}
}

// Restart starts a killed member's LXD again and waits until it answers on its socket
// (rejoining the cluster takes LXD a few seconds more: see [Cluster.WaitMemberStatus]).
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	if err := m.start(); err != nil {
		t.Fatalf("lxdtest: restart %s: %v", m.Name, err)
	}
	if err := m.waitReady(); err != nil {
		t.Fatalf("lxdtest: restart %s: %v", m.Name, err)
	}
}

// env is the environment of lxd and lxc commands for this member.
func (m *Member) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "LXD_DIR", "LXD_SOCKET", "LXD_CONF", "LXC_REMOTE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LXD_DIR="+m.Dir, "LXD_CONF="+filepath.Join(m.Dir, "lxc-conf"))
}

// nsenter enters the cluster's network namespace only: `ip netns exec` would also remount
// /sys, hiding the host's cgroup tree from LXD.
func (m *Member) nsenter(args ...string) []string {
	return append([]string{"nsenter", "--net=/run/netns/" + m.cluster.NetNS}, args...)
}

// run runs a command for this member inside the namespace, stdin from input.
func (m *Member) run(input []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := m.nsenter(args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = m.env()
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	return cmd.CombinedOutput()
}

// start runs the member's lxd in the namespace. As in internal/privatelxd, the fork happens
// on a goroutine locked to its thread so that Pdeathsig takes the daemon down with the test
// binary, unlocked once it has exited so that the thread does not end (see privatelxd's
// start); nsenter and sh exec, so the pid is LXD's.
func (m *Member) start() error {
	out, err := os.OpenFile(filepath.Join(m.Dir, "lxd.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	script := `umask 022 && exec lxd "$@"`
	if m.cluster.ownSysfs {
		// The host's cgroup tree is kept aside, a sysfs of this network namespace mounted
		// on /sys, and the tree moved back onto it.
		keep := filepath.Join(m.Dir, "cgroup-keep")
		script = fmt.Sprintf(`mkdir -p %[1]s && mount --rbind /sys/fs/cgroup %[1]s && mount -t sysfs sysfs /sys && mount --move %[1]s /sys/fs/cgroup && `, keep) + script
		script = `exec unshare -m --propagation private sh -c '` + script + `' "$0" "$@"`
	}
	argv := m.nsenter("sh", "-c", script, "lxd", "--group", "root", "--logfile", filepath.Join(m.Dir, "lxd.log"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = m.env()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // once lxd has exited: the thread lives on
		defer out.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start lxd for %s: %w", m.Name, err)
	}
	m.mu.Lock()
	m.pid, m.exited = cmd.Process.Pid, exited
	m.mu.Unlock()
	return nil
}

// waitReady waits for the member's API on its socket.
func (m *Member) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "lxd", "waitready", "--timeout=60")
	cmd.Env = m.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lxd waitready for %s: %v: %s", m.Name, err, bytes.TrimSpace(out))
	}
	return nil
}
