package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// zeroDoorAddress is where the scale-to-zero tests' front door listens, inside their
// namespace.
const zeroDoorAddress = "127.0.0.1:18082"

// zeroEnv is a shape of busybox httpd instances behind the private door that may go to
// zero, with the test as its governor: each scale request the front door sends launches an
// instance (issue 36).
type zeroEnv struct {
	*governorEnv
	hook *receiver

	// governorLog is the reference governor's log (runReferenceGovernor), if it runs one.
	governorLog string

	mu       sync.Mutex
	launch   bool
	handled  map[string]bool
	requests []api.WebhookScaleRequestMetadata
	launched int
	// askedAt is when the last scale request reached the test, madeAt when the launch it
	// made finished (the instance made or taken from the pool, and started).
	askedAt, madeAt time.Time
}

// needHAProxy skips (fails under LXDTEST_REQUIRE) without haproxy.
func needHAProxy(t testing.TB) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		if os.Getenv("LXDTEST_REQUIRE") == "1" {
			t.Fatal("haproxy is missing: install the Debian package haproxy (make deps-test)")
		}

		t.Skip("haproxy is missing (Debian package haproxy, make deps-test): the front door needs it")
	}
}

// newZeroEnv sets up the namespace's bridge, the daemon, shape web (0..3, traffic on
// zeroDoorAddress, the given hold bounds), the webhook to the test, the test's governor
// and the loop that gives each running instance an address and an httpd.
func newZeroEnv(t testing.TB, holdMax int, holdTimeout string) *zeroEnv {
	t.Helper()
	return newZeroEnvGoverned(t, holdMax, holdTimeout, true)
}

// newZeroEnvGoverned is newZeroEnv, with the test as the governor or without one (the
// caller runs the reference governor).
func newZeroEnvGoverned(t testing.TB, holdMax int, holdTimeout string, testGoverns bool) *zeroEnv {
	t.Helper()
	needHAProxy(t)
	netnsBridge(t, "10.79.0.1/24")

	env := newGovernorEnv(t, 0, 3)
	t.Cleanup(func() {
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		stopPrivateDoor(env.d.DataDir)
	})
	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	z := &zeroEnv{governorEnv: env, launch: true, handled: map[string]bool{}}
	z.setHold(t, holdMax, holdTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go z.serveInstances(ctx, t)
	if testGoverns {
		z.hook = env.hookTo(t)
		go z.govern(ctx, t)
	}

	// The private HAProxy starts at the doorkeeper's first round with the shape.
	z.waitUntil(t, "the front door listening", time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", zeroDoorAddress, time.Second)
		if err == nil {
			_ = c.Close()
		}

		return err == nil
	})
	return z
}

// setHold sets the shape's traffic with these hold bounds.
func (z *zeroEnv) setHold(t testing.TB, holdMax int, holdTimeout string) {
	z.setShape(t, func(put *api.DeploymentShapePut) {
		put.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Listen: zeroDoorAddress, DrainTimeout: "10s", HoldMax: holdMax, HoldTimeout: holdTimeout}
	})
}

// governing turns the test's governor's launches on or off.
func (z *zeroEnv) governing(on bool) {
	z.mu.Lock()
	z.launch = on
	z.mu.Unlock()
}

// govern launches an instance for each scale request from the front door, as a governor
// following scale requests does (the shape is at zero when one comes).
func (z *zeroEnv) govern(ctx context.Context, t testing.TB) {
	stop := sampleEvery(t, 10*time.Millisecond, func() {
		z.hook.mu.Lock()
		var todo []api.WebhookEvent
		for _, id := range z.hook.order {
			e := z.hook.events[id]
			if e.Type == api.WebhookScaleRequest && !z.handled[id] {
				z.handled[id] = true
				todo = append(todo, e)
			}
		}

		z.hook.mu.Unlock()
		for _, e := range todo {
			var req api.WebhookScaleRequestMetadata
			if json.Unmarshal(e.Metadata, &req) != nil || req.RequestedBy != "front-door" {
				continue
			}

			z.mu.Lock()
			z.askedAt = time.Now()
			z.requests = append(z.requests, req)
			launch := z.launch
			if launch {
				z.launched++
			}

			n := z.launched
			z.mu.Unlock()
			if launch {
				op, err := z.gov.CreateDeploymentShapeInstance("dep1", "web", z.name(fmt.Sprintf("w%d", n)))
				if err != nil {
					t.Logf("launch for a wake: %v", err)
					continue
				}

				go func() {
					if op.Wait(ctx) == nil {
						z.mu.Lock()
						z.madeAt = time.Now()
						z.mu.Unlock()
					}
				}()
			}
		}
	})
	<-ctx.Done()
	stop()
}

// stages returns when the last scale request reached the test and when its launch ended.
func (z *zeroEnv) stages() (time.Time, time.Time) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.askedAt, z.madeAt
}

// wakes returns the front door's scale requests so far.
func (z *zeroEnv) wakes() []api.WebhookScaleRequestMetadata {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]api.WebhookScaleRequestMetadata(nil), z.requests...)
}

// serveInstances gives every running instance an address on br0 and a busybox httpd as
// soon as it runs (busybox has no DHCP client and its init starts nothing), until ctx ends.
func (z *zeroEnv) serveInstances(ctx context.Context, t testing.TB) {
	// The LXD is the namespace's own: every instance is the shape's (the reference
	// governor names its own, outside the env's prefix).
	serveRunning(ctx, t, z.lxdConn, 50*time.Millisecond, func(name string, n int) bool {
		// Instances come and go one or two at a time: 200 addresses go round.
		address := fmt.Sprintf("10.79.0.%d", 10+n%200)
		script := fmt.Sprintf("ip addr add %s/24 dev eth0 && ip link set eth0 up && mkdir -p /www && echo %s > /www/index.html && httpd -p 8080 -h /www", address, name)
		code, _, stderr := z.exec(t, name, "sh", "-c", script)
		if code != 0 {
			t.Logf("configure %s: %s", name, stderr)
		}

		return code == 0
	})
}

// toZero deletes every instance through the governor API and waits until the door has
// none (the doorkeeper's next round applies it).
func (z *zeroEnv) toZero(t testing.TB) {
	t.Helper()
	names, err := z.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	var ops []interface{ Wait(context.Context) error }
	for _, name := range names {
		op, err := z.gov.DeleteDeploymentShapeInstance("dep1", "web", name)
		must(t, err)
		ops = append(ops, op)
	}

	for _, op := range ops {
		must(t, op.Wait(context.Background()))
	}

	z.waitUntil(t, "no endpoint", time.Minute, func() bool {
		list, err := z.gov.GetDeploymentShapeEndpoints("dep1", "web")
		return err == nil && len(list) == 0
	})
	// The doorkeeper applies within its round (1 s).
	time.Sleep(2 * time.Second)
}

// answer is one request's outcome through the door.
type answer struct {
	code int
	body string
	err  error
	took time.Duration
}

func (a answer) String() string {
	if a.err != nil {
		return fmt.Sprintf("error %v after %v", a.err, a.took)
	}

	return fmt.Sprintf("HTTP %d %q after %v", a.code, strings.TrimSpace(a.body), a.took.Round(time.Millisecond))
}

// ask sends one request through the door.
func ask() answer {
	start := time.Now()
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get("http://" + zeroDoorAddress + "/")
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}

	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(body), err: err, took: time.Since(start)}
}

// burst sends n requests at once and returns their answers.
func burst(n int) []answer {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = ask()
		}()
	}

	wg.Wait()
	return out
}

// failed counts the answers that are not a 200.
func failed(answers []answer) (int, []string) {
	n := 0
	var sample []string
	for _, a := range answers {
		if a.err != nil || a.code != http.StatusOK {
			n++
			if len(sample) < 5 {
				sample = append(sample, a.String())
			}
		}
	}

	return n, sample
}
