package fleet

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// A warm pool round observes (PoolView: the records and one snapshot of LXD), plans
// (PlanPools, a pure function with table tests) and acts (warmPool.round).

// PoolView is what one warm pool round observes.
type PoolView struct {
	Shapes []db.Shape
	Pool   []db.PoolInstance
	Live   Snapshot

	// Instances holds at least the records of the pool-tagged instances in Live that no
	// Pool row names (WarmPool.recordedTagged): only those matter to the plan.
	Instances []db.Instance

	// deployments maps a deployment id to its project and name.
	Deployments map[int64][2]string

	// inflight says whether this daemon is working on an instance right now.
	Inflight func(project string, name string) bool
}

// PoolFill is a shape's pool instances to make.
type PoolFill struct {
	Shape      db.Shape
	Project    string
	Deployment string
	Hash       string
	Count      int
}

// PoolPlan is what one round does: delete tagged pool instances nobody records, remove
// pool instances that are outdated, surplus, vanished or left by a crash, and make the
// missing ones.
type PoolPlan struct {
	Unrecorded []lxdapi.Instance
	Remove     []db.PoolInstance
	Fill       []PoolFill
}

// PlanPools brings every pool to its size.
func PlanPools(v PoolView, owner string, now time.Time) PoolPlan {
	var p PoolPlan

	// Tagged pool instances without a record go. An instance of a shape may still carry
	// the mark for a moment after a launch took it from the pool.
	known := map[string]bool{}
	for _, row := range v.Pool {
		known[SnapshotKey(row.Project, row.Name)] = true
	}

	for _, row := range v.Instances {
		known[SnapshotKey(row.Project, row.Name)] = true
	}

	for key, instance := range v.Live {
		if instance.Config[backend.ConfigWarmPool] != "" && !known[key] && !v.Inflight(instance.Project, instance.Name) {
			p.Unrecorded = append(p.Unrecorded, instance)
		}
	}

	byShape := map[int64][]db.PoolInstance{}
	for _, row := range v.Pool {
		byShape[row.ShapeID] = append(byShape[row.ShapeID], row)
	}

	for _, shape := range v.Shapes {
		remove, fill := PlanPool(shape, byShape[shape.ID], v, owner, now)
		p.Remove = append(p.Remove, remove...)
		if fill > 0 {
			d := v.Deployments[shape.DeploymentID]
			p.Fill = append(p.Fill, PoolFill{Shape: shape, Project: d[0], Deployment: d[1], Hash: PoolHash(&shape), Count: fill})
		}
	}

	return p
}

// PlanPool decides one shape's Pool: which of its pool instances go, and how many to make.
func PlanPool(shape db.Shape, rows []db.PoolInstance, v PoolView, owner string, now time.Time) ([]db.PoolInstance, int) {
	want := 0
	if shape.WarmPool != nil {
		want = shape.WarmPool.Size
	}

	hash := PoolHash(&shape)
	have := 0
	var remove []db.PoolInstance
	for _, row := range rows {
		exists := v.Live.Has(row.Project, row.Name)
		flying := v.Inflight(row.Project, row.Name)
		othersRunning := row.Owner != owner && now.Sub(row.StateChangedAt) < OthersGrace
		switch {
		case row.State == db.PoolTaking && (flying || othersRunning):
			// A launch is taking it (here or on another daemon): it is leaving the pool.
		case flying:
			have++ // being made right now
		case row.State == db.PoolCreating && othersRunning:
			have++ // another daemon's create, still running
		case row.State == db.PoolReady && exists && row.TemplateHash == hash && have < want:
			have++
		default:
			// Outdated, surplus, vanished, or left creating by a crash.
			remove = append(remove, row)
		}
	}

	return remove, max(0, want-have)
}
