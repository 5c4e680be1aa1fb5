package test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestTrafficClusterDoorDriverKilled (issue 35): three daemon members share an operator's
// HAProxy (--front-door haproxy, one admin socket); the holder of the door's lease drives
// it, the others follow (doc/traffic.md, "In a cluster of daemons"). Under constant load
// through the door the driver is killed (kill -9), then a surviving member scales the
// shape out and in and rolls it out: no request fails, another member takes the door over
// (how long the door went without a driver is printed), the door follows every change
// (new instances serve through it, removed ones are drained and gone from it) and LXD
// holds exactly the recorded instances.
func TestTrafficClusterDoorDriverKilled(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	needHAProxy(t)
	netnsBridge(t, "10.79.0.1/24")
	admin := operatorHAProxy(t)
	private := lxdtest.Shared(t)
	m1, m2, m3 := threeMembers(t, private.Socket, "--front-door", "haproxy", "--haproxy-socket", admin)
	members := []*daemon{m1, m2, m3}
	for _, m := range members {
		waitLXDOnline(t, m)
	}

	env := &governorEnv{d: m1, lxd: private, lxdConn: private.Client(t), admin: m1.Unix(t), prefix: "tclusterdoor"}
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, 7)))
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, "gov-cert", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "gov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	env.gov = m1.HTTPS(t, id)
	t.Cleanup(func() {
		// Through whichever member env points at by then (m1 may be the one killed).
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		env.cleanupLXD(t)
		env.cleanupRollouts(t)
	})

	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	const drain = 30 * time.Second
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Backend: "web", DrainTimeout: drain.String()}
		put.Health = &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 2}
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
	})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go configureServers(ctx, t, env)
	door := &doorEnv{governorEnv: env}
	first := door.startAt(t, 2)
	waitDoorServers(t, admin, first, nil)

	driver := doorDriver(t, members, members)
	t.Logf("measured: %s drives the door", memberName(members, driver))
	load := startLoad(20 * time.Millisecond)
	load.explain = func() string { return clusterDoorDiagnostics(members, admin) }
	var survivors []*daemon
	for _, m := range members {
		if m != driver {
			survivors = append(survivors, m)
		}
	}

	var killedAt, takenAt time.Time
	var taker *daemon
	phase(t, "the driver killed, a survivor scales out", func(t *testing.T) {
		time.Sleep(2 * time.Second) // load through the door as it was
		killedAt = time.Now()
		driver.Kill(t)
		// Another member takes the door's lease over; meanwhile the door serves its last
		// picture.
		taker = doorDriver(t, members, survivors)
		for _, span := range driveSpans(members) {
			if span.member == memberName(members, taker) && span.end.IsZero() {
				takenAt = span.start
			}
		}

		t.Logf("measured: the door went %v without a driver (kill -9 of %s until %s took its lease; lease TTL 8s)",
			takenAt.Sub(killedAt).Round(100*time.Millisecond), memberName(members, driver), memberName(members, taker))

		// Through the survivor that does not drive the door, when there is one: its drains
		// are judged by the door's own word.
		via := survivors[0]
		if via == taker {
			via = survivors[1]
		}

		env.d, env.admin, env.gov = via, via.Unix(t), via.HTTPS(t, id)
		t.Logf("measured: shape changes through %s (driver %s)", memberName(members, via), memberName(members, taker))
		var more []string
		var ops []interface{ Wait(context.Context) error }
		for i := 2; i < 4; i++ {
			name := env.name(fmt.Sprintf("i%d", i))
			more = append(more, name)
			op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			ops = append(ops, op)
		}

		for _, op := range ops {
			waitOperation(t, op)
		}

		door.waitServing(t, 4)
		waitDoorServers(t, admin, append(append([]string{}, first...), more...), nil)
		t.Logf("measured: the new instances serve through the door %v after the kill", time.Since(killedAt).Round(100*time.Millisecond))
		load.check(t, "the driver killed and a scale-out")
	})

	phase(t, "scale in through a survivor", func(t *testing.T) {
		var ops []interface{ Wait(context.Context) error }
		asked := time.Now()
		for _, name := range first {
			op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			ops = append(ops, op)
		}

		for _, op := range ops {
			waitOperation(t, op)
		}

		t.Logf("measured: 2 instances drained and deleted %v after the deletes were asked (drain timeout %v)", time.Since(asked).Round(100*time.Millisecond), drain)
		// The deletes ran on a member that follows the door: it judged each drain by the
		// door's own word (the server drained, no session left), not by the drain timeout.
		for _, name := range first {
			if !logHas(env.d.Log(), "instance drained", "instance="+name) || logHas(env.d.Log(), "instance drain timed out", "instance="+name) {
				t.Fatalf("%s's drain on %s was not judged by the door:\n%s", name, memberName(members, env.d), clusterDoorDiagnostics(members, admin))
			}
		}

		door.waitServing(t, 2)
		current, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
		must(t, err)
		waitDoorServers(t, admin, current, first)
		load.check(t, "a scale-in through a survivor")
	})

	phase(t, "a rolling rollout through a survivor", func(t *testing.T) {
		before, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
		must(t, err)
		env.setShape(t, setVersion("2"))
		op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
		must(t, err)
		waitOperation(t, op)
		door.waitServing(t, 2)
		current, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
		must(t, err)
		for _, name := range current {
			for _, old := range before {
				if name == old {
					t.Fatalf("the rollout left %s: %v", old, current)
				}
			}
		}

		waitDoorServers(t, admin, current, before)
		load.check(t, "a rolling rollout through a survivor")
	})

	load.stop()
	spans := noTwoDrivers(t, members, memberName(members, driver), killedAt)
	t.Logf("measured: who drove the door: %s", describeSpans(spans, killedAt))
	for _, m := range members {
		for _, line := range strings.Split(m.Log(), "\n") {
			if strings.Contains(line, "cannot change the shared door") || (strings.Contains(line, "lease not held") && strings.Contains(line, "front-door")) {
				t.Logf("measured: %s: %s", memberName(members, m), line)
			}
		}
	}

	phase(t, "LXD holds exactly the recorded instances", func(t *testing.T) {
		recorded, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
		must(t, err)
		sort.Strings(recorded)
		var inLXD []string
		env.waitUntil(t, "LXD and the records agreeing", time.Minute, func() bool {
			instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
			if err != nil {
				return false
			}

			inLXD = nil
			for _, i := range instances {
				inLXD = append(inLXD, i.Name)
			}

			sort.Strings(inLXD)
			return strings.Join(inLXD, ",") == strings.Join(recorded, ",")
		}, showing(func() string { return fmt.Sprintf("LXD %v, records %v", inLXD, recorded) }))
	})
}

// waitOperation waits for an operation through a member. A wait the member does not answer
// within the client's timeout is asked again, for up to 5 minutes: on a loaded machine the
// database can stall for tens of seconds after its leader is killed (the operation goes on
// meanwhile), and that stall is not what these tests are about.
func waitOperation(t *testing.T, op interface{ Wait(context.Context) error }) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := op.Wait(context.Background())
		if err == nil {
			return
		}

		if !isTimeout(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}

		t.Logf("measured: an operation's wait timed out (%v): asked again", err)
	}
}

// isTimeout says whether err is a client's timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// operatorHAProxy starts an operator's HAProxy in the test's namespace, listening on
// doorAddress with backend web as doc/traffic.md asks of one, and returns its admin
// socket. It is stopped at the end of the test.
func operatorHAProxy(t *testing.T) string {
	t.Helper()
	// Short: a unix socket path has at most 107 bytes.
	dir, err := os.MkdirTemp("", "ldd-ophx-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	admin := filepath.Join(dir, "admin.sock")
	cfg := fmt.Sprintf(`global
    stats socket %s mode 600 level admin
    nbthread 1

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout queue 30s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout check 2s

frontend fe_web
    bind %s
    default_backend web

backend web
    mode http
    balance roundrobin
    option httpchk GET /
    http-check expect rstatus ^[234]
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    http-request disable-l7-retry unless { method GET HEAD OPTIONS }
`, admin, doorAddress)
	must(t, os.WriteFile(filepath.Join(dir, "haproxy.cfg"), []byte(cfg), 0o600))
	pidFile := filepath.Join(dir, "haproxy.pid")
	out, err := exec.Command("haproxy", "-D", "-p", pidFile, "-f", filepath.Join(dir, "haproxy.cfg")).CombinedOutput()
	if err != nil {
		t.Fatalf("start the operator's haproxy: %v\n%s", err, out)
	}

	t.Cleanup(func() {
		pid, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}

		n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
		if err == nil && n > 0 {
			_ = syscall.Kill(n, syscall.SIGTERM)
		}
	})

	waitUntil(t, "the operator's haproxy answering", 10*time.Second, func() bool {
		_, err := haproxyStat(admin)
		return err == nil
	})
	return admin
}

// haproxyStat returns the status of every ld- server of backend web (an operator's door) or
// of the be_ backends (a private door), by instance.
func haproxyStat(admin string) (map[string]string, error) {
	c, err := net.DialTimeout("unix", admin, time.Second)
	if err != nil {
		return nil, err
	}

	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte("show stat\n"))
	if err != nil {
		return nil, err
	}

	servers := map[string]string{}
	scanner := bufio.NewScanner(c)
	for scanner.Scan() {
		// CSV: pxname,svname,...; status is field 18 (index 17).
		fields := strings.Split(scanner.Text(), ",")
		if len(fields) > 17 && (fields[0] == "web" || strings.HasPrefix(fields[0], "be_")) && strings.HasPrefix(fields[1], "ld-") {
			servers[strings.TrimPrefix(fields[1], "ld-")] = fields[17]
		}
	}

	return servers, scanner.Err()
}

// waitDoorServers waits until the door's backend has every instance of up as an UP
// server and none of gone.
func waitDoorServers(t *testing.T, admin string, up []string, gone []string) {
	t.Helper()
	var servers map[string]string
	var err error
	waitUntil(t, fmt.Sprintf("the door serving %v without %v", up, gone), 2*time.Minute, func() bool {
		servers, err = haproxyStat(admin)
		if err != nil {
			return false
		}

		for _, name := range up {
			if servers[name] != "UP" {
				return false
			}
		}

		for _, name := range gone {
			if _, ok := servers[name]; ok {
				return false
			}
		}

		return true
	}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("%v %v", servers, err) }))
}

// driveSpan is a time a member drove the door, from its own log.
type driveSpan struct {
	member     string
	start, end time.Time // end zero: still driving (or killed while driving)
}

// driveSpans reads every member's log for when it took the door's lease and let it go.
func driveSpans(members []*daemon) []driveSpan {
	var spans []driveSpan
	for i, m := range members {
		var open *driveSpan
		for _, line := range strings.Split(m.Log(), "\n") {
			drives := strings.Contains(line, "this member drives the shared door")
			stops := strings.Contains(line, "this member no longer drives the shared door")
			if !drives && !stops {
				continue
			}

			at, ok := logLineTime(line)
			if !ok {
				continue
			}

			if drives {
				open = &driveSpan{member: fmt.Sprintf("m%d", i+1), start: at}
				continue
			}

			if open != nil {
				open.end = at
				spans = append(spans, *open)
				open = nil
			}
		}

		if open != nil {
			spans = append(spans, *open)
		}
	}

	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	return spans
}

// logLineTime is the time= of a daemon's log line.
func logLineTime(line string) (time.Time, bool) {
	field, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
	at, err := time.Parse(time.RFC3339Nano, field)
	return at, err == nil
}

// doorDriver waits until exactly one live member drives the door, and returns it.
func doorDriver(t *testing.T, members []*daemon, live []*daemon) *daemon {
	t.Helper()
	var driver *daemon
	var drivers []string
	waitUntil(t, "one member driving the door", time.Minute, func() bool {
		drivers = nil
		for _, span := range driveSpans(members) {
			if !span.end.IsZero() {
				continue
			}

			for _, m := range live {
				if memberName(members, m) == span.member {
					driver = m
					drivers = append(drivers, span.member)
				}
			}
		}

		return len(drivers) == 1
	}, every(100*time.Millisecond), showing(func() string {
		return fmt.Sprintf("drivers %v\n%s", drivers, clusterDoorDiagnostics(members, ""))
	}))
	return driver
}

// noTwoDrivers fails the test if two members' drives overlap; killed is when the killed
// member died (its drive ended then).
func noTwoDrivers(t *testing.T, members []*daemon, killed string, killedAt time.Time) []driveSpan {
	t.Helper()
	spans := driveSpans(members)
	now := time.Now()
	for i := range spans {
		if spans[i].end.IsZero() {
			spans[i].end = now
			if spans[i].member == killed && spans[i].start.Before(killedAt) {
				spans[i].end = killedAt
			}
		}
	}

	for i := 1; i < len(spans); i++ {
		for j := 0; j < i; j++ {
			if spans[i].start.Before(spans[j].end) {
				t.Fatalf("%s and %s drove the door at once: %+v", spans[j].member, spans[i].member, spans)
			}
		}
	}

	return spans
}

// describeSpans says who drove the door when, relative to the kill.
func describeSpans(spans []driveSpan, killedAt time.Time) string {
	var parts []string
	for _, span := range spans {
		parts = append(parts, fmt.Sprintf("%s %+.1fs..%+.1fs", span.member, span.start.Sub(killedAt).Seconds(), span.end.Sub(killedAt).Seconds()))
	}

	return strings.Join(parts, ", ") + " (relative to the kill)"
}

// logHas says whether a line of log has every one of parts.
func logHas(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		found := true
		for _, part := range parts {
			found = found && strings.Contains(line, part)
		}

		if found {
			return true
		}
	}

	return false
}

// memberName is m1, m2 or m3.
func memberName(members []*daemon, d *daemon) string {
	for i, m := range members {
		if m == d {
			return fmt.Sprintf("m%d", i+1)
		}
	}

	return "?"
}

// clusterDoorDiagnostics is what explains a failed request: every member's lines about
// drains and the door, and the door's servers.
func clusterDoorDiagnostics(members []*daemon, admin string) string {
	var b strings.Builder
	for i, m := range members {
		fmt.Fprintf(&b, "m%d (drains and the door):\n", i+1)
		for _, line := range strings.Split(m.Log(), "\n") {
			if strings.Contains(line, "drain") || strings.Contains(line, "front door") || strings.Contains(line, "lease") {
				b.WriteString(line + "\n")
			}
		}
	}

	if admin != "" {
		servers, err := haproxyStat(admin)
		fmt.Fprintf(&b, "the door's servers: %v %v\n", servers, err)
	}

	return b.String()
}
