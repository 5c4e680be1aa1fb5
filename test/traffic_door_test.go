package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// doorAddress is where the test's front door listens, inside the test's namespace.
const doorAddress = "127.0.0.1:18081"

// TestTrafficFrontDoor (issue 35): a shape of busybox httpd instances behind the daemon's
// private HAProxy, under constant load through the door from a Go load generator: no
// request fails while a governor scales 2 -> 6 -> 2 and while a rolling rollout replaces
// every instance; a drained instance goes once its last request ends, not before, and
// long before its drain timeout. In a network namespace the test makes, as
// TestHTTPAndTCPHealthChecks.
func TestTrafficFrontDoor(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	const drain = 2 * time.Minute
	env := newDoorEnv(t, drain, &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 2})
	waitServing := env.waitServing
	names := env.startAt(t, 2)
	load := env.load()
	phase(t, "scale 2 -> 6 -> 2", func(t *testing.T) {
		var ops []interface{ Wait(context.Context) error }
		var more []string
		for i := 2; i < 6; i++ {
			name := env.name(fmt.Sprintf("i%d", i))
			more = append(more, name)
			op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			ops = append(ops, op)
		}

		for _, op := range ops {
			must(t, op.Wait(context.Background()))
		}

		waitServing(t, 6)
		ops = nil
		for _, name := range more {
			op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			ops = append(ops, op)
		}

		for _, op := range ops {
			must(t, op.Wait(context.Background()))
		}

		waitServing(t, 2)
		load.check(t, "scaling 2 -> 6 -> 2")
	})

	phase(t, "a rolling rollout", func(t *testing.T) {
		env.setShape(t, setVersion("2"))
		op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
		must(t, err)
		rolloutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		must(t, op.Wait(rolloutCtx))
		waitServing(t, 2)
		load.check(t, "a rolling rollout")
		current, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
		must(t, err)
		for _, name := range current {
			for _, old := range names {
				if name == old {
					t.Fatalf("the rollout left %s: %v", old, current)
				}
			}
		}

		names = current
	})

	load.stop()
	phase(t, "a drain waits for the last request and no longer", func(t *testing.T) {
		// A slow request (the CGI sleeps 6 s) is in flight on one instance when it is
		// deleted: the instance goes after the request ends, long before its drain timeout.
		sent := time.Now()
		result := make(chan error, 1)
		go func() { result <- get(t, "/cgi-bin/slow") }()
		var busy string
		env.waitUntil(t, "the slow request running", time.Minute, func() bool {
			for _, name := range names {
				if code, _, _ := env.exec(t, name, "test", "-f", "/tmp/busy"); code == 0 {
					busy = name
					return true
				}
			}

			return false
		})

		asked := time.Now()
		op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", busy)
		must(t, err)
		var gone time.Time
		env.waitUntil(t, busy+" deleted in LXD", drain+time.Minute, func() bool {
			_, _, err := env.lxdConn.GetInstance(busy)
			if err != nil && gone.IsZero() {
				gone = time.Now()
			}

			return err != nil
		})
		must(t, op.Wait(context.Background()))
		must(t, <-result)
		if gone.Sub(sent) < 6*time.Second {
			t.Fatalf("%s was deleted %v after its slow request (6 s) was sent: before the request could end", busy, gone.Sub(sent))
		}

		if gone.Sub(asked) >= drain {
			t.Fatalf("%s was deleted only at its drain timeout (%v): the door's sessions were not waited on", busy, gone.Sub(asked))
		}

		t.Logf("measured: %s deleted %v after the delete was asked, %v after its slow request was sent (drain timeout %v)",
			busy, gone.Sub(asked).Round(100*time.Millisecond), gone.Sub(sent).Round(100*time.Millisecond), drain)
	})
}

// configureServers gives every running instance of the shape an address on br0 and a
// busybox httpd (with a slow CGI that marks /tmp/busy while it runs), until ctx ends.
func configureServers(ctx context.Context, t *testing.T, env *governorEnv) {
	slow := "#!/bin/sh\ntouch /tmp/busy\nsleep 6\nrm -f /tmp/busy\necho 'Content-Type: text/plain'\necho\necho slow\n"
	// The test's LXD, private to its namespace, holds only the shape's instances.
	serveRunning(ctx, t, env.lxdConn, 200*time.Millisecond, func(name string, n int) bool {
		script := fmt.Sprintf("ip addr add 10.79.0.%d/24 dev eth0 && ip link set eth0 up && mkdir -p /www/cgi-bin && echo %s > /www/index.html && echo ok > /www/healthz && printf '%%s' \"$SLOW\" > /www/cgi-bin/slow && chmod 755 /www/cgi-bin/slow && httpd -p 8080 -h /www", 10+n, name)
		code, stderr, err := shellIn(env.lxdConn, name, script, map[string]string{"SLOW": slow})
		if err == nil && code != 0 {
			t.Logf("configure %s: %s", name, stderr)
		}

		return err == nil && code == 0
	})
}

// get sends one request through the door; a connection error or a 5xx is an error.
func get(t testing.TB, path string) error {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + doorAddress + path)
	if err != nil {
		return err
	}

	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 500 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}

	return nil
}

// loadGenerator sends requests through the door from several workers and counts those
// that fail.
type loadGenerator struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	errors       []string
	// failedAt is when each failed request was sent, for counting failures by when they
	// were sent rather than when they ended.
	failedAt []time.Time
	cancel   context.CancelFunc
	url      string
	explain  func() string
	done     sync.WaitGroup
}

// startLoad starts 8 workers, each sending a request every pause (about 8/pause a second
// at most; fewer on a busy machine) through the door at doorAddress.
func startLoad(pause time.Duration) *loadGenerator {
	return startLoadTo(pause, "http://"+doorAddress+"/", nil)
}

// startLoadTo is startLoad to url, connecting with dial (nil: the default dialer).
func startLoadTo(pause time.Duration, url string, dial func(ctx context.Context, network, address string) (net.Conn, error)) *loadGenerator {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loadGenerator{cancel: cancel, url: url}
	// A connection idle in the client's pool longer than HAProxy's http-keep-alive timeout
	// (10 s) is closed by HAProxy, and a request written onto it as it closes fails with EOF
	// whatever is behind the door: the client drops its idle connections sooner, and keeps
	// one per worker so that none sits idle under a busier one.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 5 * time.Second, DialContext: dial}}
	for w := 0; w < 8; w++ {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for ctx.Err() == nil {
				sent := time.Now()
				err := l.one(client)
				l.sent.Add(1)
				if err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					l.failedAt = append(l.failedAt, sent)
					if len(l.errors) < 5 {
						l.errors = append(l.errors, time.Now().Format("15:04:05.000")+" "+err.Error())
					}

					l.mu.Unlock()
				}

				time.Sleep(pause)
			}
		}()
	}

	return l
}

func (l *loadGenerator) one(client *http.Client) error {
	resp, err := client.Get(l.url)
	if err != nil {
		return err
	}

	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}

	if resp.StatusCode >= 500 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}

	return nil
}

// check fails the test if any request failed since the last check, and starts counting
// again.
func (l *loadGenerator) check(t *testing.T, during string) {
	sent, failed := l.sent.Swap(0), l.failed.Swap(0)
	l.mu.Lock()
	errs := l.errors
	l.errors = nil
	l.mu.Unlock()
	t.Logf("measured: %s: %d requests through the front door, %d failed", during, sent, failed)
	if failed > 0 {
		t.Fatalf("%d of %d requests failed during %s: %v\n%s", failed, sent, during, errs, l.explain())
	}

	if sent == 0 {
		t.Fatalf("no request was sent during %s", during)
	}
}

// failedSent counts the failed requests sent from a moment (included) until another (not
// included).
func (l *loadGenerator) failedSent(from, until time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, sent := range l.failedAt {
		if !sent.Before(from) && sent.Before(until) {
			n++
		}
	}

	return n
}

func (l *loadGenerator) stop() {
	l.cancel()
	l.done.Wait()
}

// stopPrivateDoor stops the private HAProxy a daemon with this data directory left
// running (it outlives the daemon by design), found by its master socket's path on its
// command line (the pid file goes with the data directory).
func stopPrivateDoor(dataDir string) {
	master := filepath.Join(dataDir, "frontdoor", "master.sock")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte(master)) {
			continue
		}

		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}

// doorDiagnostics is what explains a failed request: the daemon's lines about drains and
// the door, and the private HAProxy's own log.
func doorDiagnostics(env *governorEnv) string {
	var b strings.Builder
	b.WriteString("daemon (drains and the door):\n")
	for _, line := range strings.Split(env.d.Log(), "\n") {
		if strings.Contains(line, "drain") || strings.Contains(line, "front door") || strings.Contains(line, "Deleting") || strings.Contains(line, "instance-deleted") {
			b.WriteString(line + "\n")
		}
	}

	haproxyLog, _ := os.ReadFile(filepath.Join(env.d.DataDir, "frontdoor", "haproxy.log"))
	b.WriteString("haproxy.log:\n" + string(haproxyLog))
	return b.String()
}
