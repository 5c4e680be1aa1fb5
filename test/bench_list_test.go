package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// BenchmarkListShape prices a shape's recursion=1 listing, usage included, against LXD's
// own recursion=1 listing of the same instances (filter on the shape key), alternating the
// two so that the machine's drift affects each alike, with LXD's /1.0/metrics of the
// project timed beside them: LIST_BENCH_INSTANCES running busybox instances of one shape
// (default 200), no health checks. A shorter companion of BenchmarkScale's reads.
func BenchmarkListShape(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("LIST_BENCH_INSTANCES")); err == nil && v > 0 {
		n = v
	}

	private := lxdtest.Start(b)
	d := startDaemon(b, daemonOptions{LXDSocket: private.Socket})
	waitLXDOnline(b, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(b), admin: d.Unix(b), prefix: "s23l"}
	b.Cleanup(func() { stopAll(env) })
	must(b, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(b, env.admin.CreateDeploymentShape("dep1", webShape("s23list", 0, n)))

	start := time.Now()
	launchMany(b, env, n, func(int) string { return "s23list" }, func(i int) string { return fmt.Sprintf("l%d", i) })
	fmt.Printf("list bench: %d busybox instances of one shape, launched in %v\n", n, time.Since(start).Round(time.Second))
	filter := []string{"config.user.lxd-deployd.shape=s23list"}
	var ours, theirs, metrics []time.Duration
	withUsage, busy := 0, 0
	const rounds = 15
	for i := 0; i < rounds; i++ {
		ours = append(ours, timed(b, func() error {
			listed, err := env.admin.GetDeploymentShapeInstances("dep1", "s23list")
			if err == nil && len(listed) != n {
				err = fmt.Errorf("listed %d instances, want %d", len(listed), n)
			}

			for _, instance := range listed {
				if instance.Usage != nil {
					withUsage++
				}
			}

			return err
		}))
		theirs = append(theirs, timed(b, func() error {
			_, err := env.lxdConn.GetInstancesWithFilter(lxdapi.InstanceTypeAny, filter)
			return err
		}))
		metricsStart := time.Now()
		status, err := lxdMetricsStatus(env)
		must(b, err)
		switch status {
		case http.StatusOK:
			metrics = append(metrics, time.Since(metricsStart))
		case http.StatusLocked:
			busy++ // LXD builds them for another request (the daemon's)
		default:
			b.Fatalf("LXD's /1.0/metrics answered %d", status)
		}

		time.Sleep(time.Second)
	}

	ratio := float64(median(ours)) / float64(median(theirs))
	fmt.Printf("  list the shape (recursion=1, usage included): %v median, %v slowest; usage on %.0f%% of the instances listed\n", ms(median(ours)), ms(slowest(ours)), 100*float64(withUsage)/float64(rounds*n))
	fmt.Printf("  LXD's recursion=1 listing of the same %d: %v median (ratio %.2f, goal <= 1.2)\n", n, ms(median(theirs)), ratio)
	if len(metrics) == 0 {
		metrics = []time.Duration{0}
	}

	fmt.Printf("  LXD's /1.0/metrics: %v median, %v slowest; %d of %d refused with 423 (LXD building them for the daemon)\n", ms(median(metrics)), ms(slowest(metrics)), busy, rounds)
	b.ReportMetric(ratio, "list-ratio")
}

func slowest(values []time.Duration) time.Duration {
	var max time.Duration
	for _, v := range values {
		if v > max {
			max = v
		}
	}

	return max
}

// lxdMetricsStatus reads LXD's /1.0/metrics whole and returns its HTTP status: the client's
// GetMetrics turns a 423 into an error of text only.
func lxdMetricsStatus(env *governorEnv) (int, error) {
	req, err := http.NewRequest("GET", "http://unix.socket/1.0/metrics", nil)
	if err != nil {
		return 0, err
	}

	resp, err := env.lxdConn.DoHTTP(req)
	if err != nil {
		return 0, err
	}

	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
