package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// BenchmarkListShape prices a shape's recursion=1 listing, usage included, against LXD's
// own recursion=1 listing of the same instances (filter on the shape key), alternating the
// two so that the machine's drift affects each alike, with LXD's /1.0/metrics of the
// project timed beside them, at each size of LIST_BENCH_INSTANCES (comma-separated,
// default 100,1000): running busybox instances of one shape, launched through the daemon
// (so running: the daemon makes no stopped instances), the next size adding to the last on
// the same private LXD, no health checks. Issue 34's goal is <= 1.2 at 100 and at 1,000.
func BenchmarkListShape(b *testing.B) {
	sizes := []int{100, 1000}
	if v := os.Getenv("LIST_BENCH_INSTANCES"); v != "" {
		sizes = nil
		for _, field := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil || n <= 0 {
				b.Fatalf("LIST_BENCH_INSTANCES=%q: give instance counts separated by commas, such as 100,1000", v)
			}

			sizes = append(sizes, n)
		}
	}

	slices.Sort(sizes)
	private := lxdtest.Start(b)
	d := startDaemon(b, daemonOptions{LXDSocket: private.Socket})
	waitLXDOnline(b, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(b), admin: d.Unix(b), prefix: "s23l"}
	b.Cleanup(func() { stopAll(env) })
	must(b, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(b, env.admin.CreateDeploymentShape("dep1", webShape("s23list", 0, sizes[len(sizes)-1])))
	launched := 0
	for _, n := range sizes {
		start := time.Now()
		from := launched
		launchMany(b, env, n-from, func(int) string { return "s23list" }, func(i int) string { return fmt.Sprintf("l%d", from+i) })
		launched = n
		fmt.Printf("list bench: %d busybox instances of one shape, %d launched in %v\n", n, n-from, time.Since(start).Round(time.Second))
		ratio := listShapeRounds(b, env, n)
		b.ReportMetric(ratio, fmt.Sprintf("list-ratio-%d", n))
	}
}

// listShapeRounds times the listings of BenchmarkListShape with n instances, prints them
// and returns the ratio of the medians.
func listShapeRounds(b *testing.B, env *governorEnv, n int) float64 {
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
	return ratio
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
