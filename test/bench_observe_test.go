package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkInstanceListing compares GET .../instances?recursion=1 of a shape of 60 running
// containers with LXD's own recursion=1 listing of the project, side by side over the
// same kind of transport (each daemon's unix socket, through its Go client).
func BenchmarkInstanceListing(b *testing.B) {
	const size, rounds = 60, 30
	env := newGovernorEnv(b, 0, size)
	launchMany(b, env, size, func(int) string { return "web" }, func(i int) string { return fmt.Sprintf("l%d", i) })
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var direct, ours []time.Duration
		for i := 0; i < rounds; i++ {
			// Alternate so that any drift of the machine affects both alike.
			start := time.Now()
			instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
			must(b, err)
			direct = append(direct, time.Since(start))

			start = time.Now()
			listed, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
			must(b, err)
			ours = append(ours, time.Since(start))
			if len(listed) != size || len(instances) < size {
				b.Fatalf("listed %d instances, LXD has %d", len(listed), len(instances))
			}
		}

		ratio := float64(median(ours)) / float64(median(direct))
		fmt.Printf("listing a shape of %d running containers (recursion=1), median of %d:\n", size, rounds)
		fmt.Printf("  LXD's own listing of the project: %v\n", median(direct).Round(100*time.Microsecond))
		fmt.Printf("  through lxd-deployd:             %v (ratio %.2f, goal <= 1.2)\n", median(ours).Round(100*time.Microsecond), ratio)
		b.ReportMetric(ratio, "ratio")
	}

	b.StopTimer()
	env.cleanupLXD(b)
}

// BenchmarkMetricsScrape times a scrape of /1.0/metrics with 1,000 shapes (goal: under 50
// ms); LXD is not needed, as a scrape never calls it.
func BenchmarkMetricsScrape(b *testing.B) {
	const deployments, shapesEach, rounds = 20, 50, 20
	d := startDaemon(b, daemonOptions{})
	admin := d.Unix(b)
	for i := 0; i < deployments; i++ {
		name := fmt.Sprintf("dep%d", i)
		must(b, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: name}}))
		for j := 0; j < shapesEach; j++ {
			must(b, admin.CreateDeploymentShape(name, webShape(fmt.Sprintf("s%d", j), 0, 5)))
		}
	}

	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var times []time.Duration
		size := 0
		for i := 0; i < rounds; i++ {
			start := time.Now()
			text, err := admin.GetMetrics(context.Background())
			must(b, err)
			times = append(times, time.Since(start))
			size = len(text)
		}

		fmt.Printf("scrape of /1.0/metrics with %d shapes (%d KiB), median of %d: %v (goal < 50ms)\n", deployments*shapesEach, size/1024, rounds, median(times).Round(100*time.Microsecond))
		b.ReportMetric(float64(median(times))/float64(time.Millisecond), "scrape-ms")
	}
}
