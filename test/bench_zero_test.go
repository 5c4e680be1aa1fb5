package test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/internal/loadgen"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkWakeFromZero (issue 36) measures the first request's latency through the front
// door of a shape at zero, from the request to its answer, over 20 wakes: cold (the
// governor's launch makes the instance from the image) and from a warm pool of one
// stopped instance (the launch starts it); then a burst of 50 concurrent first requests,
// which must all succeed. Goals: p95 < 3 s cold, < 1.5 s warm. The governor is the test,
// launching on the front door's scale request at once. In a network namespace of its own.
func BenchmarkWakeFromZero(b *testing.B) {
	if os.Getenv(netnsChildEnv) == "" {
		runBenchInNetns(b)
		return
	}

	for i := 0; i < b.N; i++ {
		benchWake(b, 20)
	}
}

func benchWake(b *testing.B, n int) {
	z := newZeroEnv(b, 100, "45s")
	wake := func(label string) []time.Duration {
		var took, asked, made []time.Duration
		for i := 0; i < n; i++ {
			z.toZero(b)
			if label == "warm pool" {
				z.waitUntil(b, "the warm pool ready", 2*time.Minute, func() bool {
					s, _, err := z.admin.GetDeploymentShape("dep1", "web")
					return err == nil && s.WarmPoolReady >= 1
				})
			}

			start := time.Now()
			a := ask()
			if a.err != nil || a.code != http.StatusOK {
				b.Fatalf("%s wake %d: %v", label, i, a)
			}

			took = append(took, a.took)
			askedAt, madeAt := z.stages()
			asked = append(asked, askedAt.Sub(start))
			made = append(made, madeAt.Sub(start))
		}

		p50, p95 := loadgen.Percentile(took, 50), loadgen.Percentile(took, 95)
		fmt.Printf("measured: first request from zero, %s: p50 %v p95 %v over %d wakes (p50 of the stages from the request: scale request at the governor %v, launch done %v)\n",
			label, p50.Round(time.Millisecond), p95.Round(time.Millisecond), n, loadgen.Percentile(asked, 50).Round(time.Millisecond), loadgen.Percentile(made, 50).Round(time.Millisecond))
		return took
	}

	cold := wake("cold")
	z.setShape(b, func(put *api.DeploymentShapePut) { put.WarmPool = &api.DeploymentShapeWarmPool{Size: 1} })
	warm := wake("warm pool")
	z.toZero(b)
	z.waitUntil(b, "the warm pool ready", 2*time.Minute, func() bool {
		s, _, err := z.admin.GetDeploymentShape("dep1", "web")
		return err == nil && s.WarmPoolReady >= 1
	})
	answers := burst(50)
	bad, sample := failed(answers)
	fmt.Printf("measured: a burst of 50 concurrent first requests from zero (warm pool): %d failed %v\n", bad, sample)
	b.ReportMetric(float64(loadgen.Percentile(cold, 95).Milliseconds()), "cold-p95-ms")
	b.ReportMetric(float64(loadgen.Percentile(warm, 95).Milliseconds()), "warm-p95-ms")
	b.ReportMetric(float64(bad), "burst-failed")
	if bad > 0 {
		b.Fatalf("%d of 50 first requests failed: %v", bad, sample)
	}
}

// runBenchInNetns runs the calling benchmark again, once, in a copy of the test binary
// inside a fresh network namespace, and prints what it measured.
func runBenchInNetns(b *testing.B) {
	name := fmt.Sprintf("ldd-bench-%d", os.Getpid())
	out, err := exec.Command("ip", "netns", "add", name).CombinedOutput()
	if err != nil {
		if os.Getenv("LXDTEST_REQUIRE") != "" {
			b.Fatalf("cannot make a network namespace: %v\n%s", err, out)
		}

		b.Skipf("cannot make a network namespace (needs root): %v\n%s", err, out)
	}

	defer func() { _ = exec.Command("ip", "netns", "del", name).Run() }()
	cmd := exec.Command("ip", "netns", "exec", name, os.Args[0], "-test.run", "^$", "-test.bench", "^"+b.Name()+"$", "-test.benchtime", "1x", "-test.v", "-test.count=1")
	// The copy uses the binaries TestMain built, as runInNetns's do.
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1", builtBinariesEnv+"="+filepath.Dir(daemonBinary))
	out, err = cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "measured: ") || strings.Contains(line, "-ms") {
			fmt.Println(strings.TrimSpace(line))
		}
	}

	if err != nil || !strings.Contains(string(out), "ok ") && !strings.Contains(string(out), "PASS") {
		b.Fatalf("inside network namespace %s: %v\n%s", name, err, out)
	}
}
