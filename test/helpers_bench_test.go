package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// median returns the middle of values, for benchmarks that print a typical time.
func median(values []time.Duration) time.Duration {
	sorted := append([]time.Duration{}, values...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

// timed is how long f took; an error fails the benchmark.
func timed(b *testing.B, f func() error) time.Duration {
	start := time.Now()
	must(b, f())
	return time.Since(start)
}

// timedRounds is the median time of rounds calls of f.
func timedRounds(b *testing.B, rounds int, f func() error) time.Duration {
	var times []time.Duration
	for i := 0; i < rounds; i++ {
		times = append(times, timed(b, f))
	}

	return median(times)
}

// inParallel runs f on every name at once and returns the wall time; any error fails the
// benchmark.
func inParallel(b *testing.B, names []string, f func(name string) error) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			err := f(name)
			if err != nil {
				b.Errorf("%s: %v", name, err)
			}
		}(name)
	}

	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}

	return time.Since(start)
}

// stopAndDelete force-stops and deletes an instance directly in LXD, as a user would.
func stopAndDelete(env *governorEnv, name string) error {
	err := waitDirect(env)(env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""))
	if err == nil {
		err = waitDirect(env)(env.lxdConn.DeleteInstance(name))
	}

	return err
}

// launchDirect creates and starts a busybox instance directly in LXD: the baseline the
// benchmarks hold the daemon's launches to.
func launchDirect(env *governorEnv, name string) error {
	err := waitDirect(env)(env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: name, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}}))
	if err == nil {
		err = waitDirect(env)(env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, ""))
	}

	return err
}

// waitDirect waits for an LXD operation the cheapest way LXD offers, a long poll of its
// /wait, as the daemon does: the client's own Wait opens an event listener per operation,
// which cost LXD more CPU than the work measured and flattered the daemon's ratios.
func waitDirect(env *governorEnv) func(op lxd.Operation, err error) error {
	return func(op lxd.Operation, err error) error {
		if err != nil {
			return err
		}

		done, _, err := env.lxdConn.GetOperationWait(op.Get().ID, -1)
		if err == nil && done.Err != "" {
			err = errors.New(done.Err)
		}

		return err
	}
}

// ms rounds a duration for printing.
func ms(d time.Duration) time.Duration {
	return d.Round(100 * time.Microsecond)
}

func mib(bytes int64) float64 {
	return float64(bytes) / (1 << 20)
}

// processRSS is a process's resident memory in bytes.
func processRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	must(b, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			must(b, err)
			return kb << 10
		}
	}

	b.Fatalf("no VmRSS for %d", pid)
	return 0
}

// pprofGet fetches a profile from a daemon started with --debug-pprof (its unix socket)
// into dir/name.
func pprofGet(b *testing.B, d *daemon, path string, dir string, name string) string {
	file, err := pprofFetch(d, path, dir, name)
	must(b, err)
	return file
}

// pprofFetch is pprofGet for another goroutine than the benchmark's.
func pprofFetch(d *daemon, path string, dir string, name string) (string, error) {
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.Socket)
	}}}

	resp, err := c.Get("http://lxd-deployd" + path)
	if err != nil {
		return "", err
	}

	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}

	err = os.MkdirAll(dir, 0o755)
	if err != nil {
		return "", err
	}

	file := filepath.Join(dir, name)
	out, err := os.Create(file)
	if err != nil {
		return "", err
	}

	_, err = io.Copy(out, resp.Body)
	if err == nil {
		err = out.Close()
	}

	return file, err
}

// pprofTop prints the first lines of `go tool pprof -top` of a profile, when go is there.
func pprofTop(file string, args ...string) {
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top", "-nodecount=25"}, args...), file)...).CombinedOutput()
	if err != nil {
		fmt.Printf("    (go tool pprof: %v)\n", err)
		return
	}

	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Println("    " + line)
	}
}

// launchMany launches n instances through the admin socket, 16 at a time: instance i of
// shape shapeOf(i), named nameOf(i). It fails the benchmark if any launch fails.
func launchMany(b *testing.B, env *governorEnv, n int, shapeOf func(i int) string, nameOf func(i int) string) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		wg.Add(1)
		slots <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			op, err := env.admin.CreateDeploymentShapeInstance("dep1", shapeOf(i), env.name(nameOf(i)))
			if err == nil {
				err = op.Wait(context.Background())
			}

			if err != nil {
				b.Error(err)
			}
		}(i)
	}

	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}
