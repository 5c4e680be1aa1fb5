package scrape

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A shape's ready count follows rules.Ready: the healthy settled instances when it has
// health checks, every settled one otherwise; limits are reported in their base units.
func TestShapeStat(t *testing.T) {
	counts := db.ShapeCount{Project: "p", Deployment: "d", Shape: "s", Current: 4, Settled: 3, SettledHealthy: 1, LimitCPU: "2", LimitMemory: "1GiB"}
	if stat := ShapeStat(counts); stat.HasHealthChecks || stat.Ready != 3 || stat.ResourceLimits[api.LimitCPU] != 2 || stat.ResourceLimits[api.LimitMemory] != 1<<30 {
		t.Fatalf("without checks: %+v", stat)
	}

	counts.Health = &api.DeploymentShapeHealth{Command: []string{"true"}}
	counts.LimitMemory = "not a size"
	counts.WarmPool = &api.DeploymentShapeWarmPool{Size: 2}
	stat := ShapeStat(counts)
	if !stat.HasHealthChecks || stat.Ready != 1 || !stat.HasWarmPool || stat.WarmPoolSize != 2 {
		t.Fatalf("with checks and a pool: %+v", stat)
	}

	if _, ok := stat.ResourceLimits[api.LimitMemory]; ok {
		t.Fatalf("a limit that does not parse is reported: %+v", stat.ResourceLimits)
	}
}

// A scrape outside an LXD cluster reports no placement, and reads no records for it.
func TestPlacementOutsideACluster(t *testing.T) {
	stats, members, err := Placement(nil, func() backend.ClusterView { return backend.ClusterView{} })(t.Context())
	if stats != nil || members != nil || err != nil {
		t.Fatalf("%v %v %v", stats, members, err)
	}
}
