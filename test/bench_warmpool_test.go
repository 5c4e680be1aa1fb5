package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkWarmPoolLaunch measures a launch through lxd-deployd that takes a warm pool
// instance (rename + start) against a cold one (image unpack + start), alternating in the
// same run on the private LXD: for busybox, then for an image with a 100 MB rootfs. Run
// with `make bench`; it prints the figures and reports them as benchmark metrics.
func BenchmarkWarmPoolLaunch(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchWarmPool(b)
	}
}

func benchWarmPool(b *testing.B) {
	const n = 5
	env := newGovernorEnv(b, 0, 0)
	seen := map[string]bool{}
	b.Cleanup(func() {
		for name := range seen {
			env.deleteByHand(name)
		}
	})

	bigImage := env.name("big")
	env.publishBigImage(b, bigImage)
	b.Cleanup(func() {
		image, _, err := env.lxdConn.GetImageAlias(bigImage)
		if err == nil {
			if op, err := env.lxdConn.DeleteImage(image.Target); err == nil {
				_ = op.Wait()
			}
		}
	})

	for _, image := range []struct{ label, alias string }{{"busybox", "busybox"}, {"busybox + 100 MB rootfs", bigImage}} {
		cold, warm := env.name("cold"), env.name("warm")
		for _, shape := range []string{cold, warm} {
			post := webShape(shape, 0, n)
			post.InstanceTemplate.Source.Alias = image.alias
			if shape == warm {
				post.WarmPool = &api.DeploymentShapeWarmPool{Size: 1}
			}

			must(b, env.admin.CreateDeploymentShape("dep1", post))
		}

		launch := func(shape string, name string) time.Duration {
			start := time.Now()
			op, err := env.gov.CreateDeploymentShapeInstance("dep1", shape, name)
			if err == nil {
				err = op.Wait(context.Background())
			}

			must(b, err)
			return time.Since(start)
		}

		var coldTimes, warmTimes []time.Duration
		for i := 0; i < n; i++ {
			// The pool refills in the background between launches, untimed.
			env.waitUntil(b, "the warm pool refilled", 2*time.Minute, func() bool {
				pool, err := env.admin.GetDeploymentShapeWarmPool("dep1", warm)
				must(b, err)
				ready := 0
				for _, p := range pool {
					seen[p.Name] = true
					if p.State == "ready" {
						ready++
					}
				}

				return ready > 0
			}, every(100*time.Millisecond))

			coldTimes = append(coldTimes, launch(cold, env.name(fmt.Sprintf("c%d", i))))
			warmTimes = append(warmTimes, launch(warm, env.name(fmt.Sprintf("w%d", i))))
		}

		coldMedian, warmMedian := median(coldTimes), median(warmTimes)
		ratio := float64(warmMedian) / float64(coldMedian)
		fmt.Printf("launch through lxd-deployd (%s), median of %d:\n", image.label, n)
		fmt.Printf("  cold (create from image + start): %v\n", coldMedian.Round(time.Millisecond))
		fmt.Printf("  from the warm pool (rename + start): %v (ratio %.2f)\n", warmMedian.Round(time.Millisecond), ratio)
		b.ReportMetric(ratio, "ratio-"+map[bool]string{true: "busybox", false: "100mb"}[image.alias == "busybox"])

		for _, shape := range []string{cold, warm} {
			names, err := env.gov.GetDeploymentShapeInstanceNames("dep1", shape)
			must(b, err)
			for _, name := range names {
				op, err := env.gov.DeleteDeploymentShapeInstance("dep1", shape, name)
				if err == nil {
					err = op.Wait(context.Background())
				}

				must(b, err)
			}

			must(b, env.admin.DeleteDeploymentShape("dep1", shape, false))
		}
	}

	env.cleanupLXD(b)
}
