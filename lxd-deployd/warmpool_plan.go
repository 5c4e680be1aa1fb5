package main

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// A warm pool round observes (poolView: the records and one snapshot of LXD), plans
// (planPools, a pure function with table tests) and acts (warmPool.round).

// poolView is what one warm pool round observes.
type poolView struct {
	shapes    []db.Shape
	pool      []db.PoolInstance
	instances []db.Instance
	live      lxdSnapshot

	// deployments maps a deployment id to its project and name.
	deployments map[int64][2]string

	// inflight says whether this daemon is working on an instance right now.
	inflight func(project string, name string) bool
}

// poolFill is a shape's pool instances to make.
type poolFill struct {
	shape      db.Shape
	project    string
	deployment string
	hash       string
	count      int
}

// poolPlan is what one round does: delete tagged pool instances nobody records, remove
// pool instances that are outdated, surplus, vanished or left by a crash, and make the
// missing ones.
type poolPlan struct {
	unrecorded []lxdapi.Instance
	remove     []db.PoolInstance
	fill       []poolFill
}

// planPools brings every pool to its size.
func planPools(v poolView, owner string, now time.Time) poolPlan {
	var p poolPlan

	// Tagged pool instances without a record go. An instance of a shape may still carry
	// the mark for a moment after a launch took it from the pool.
	known := map[string]bool{}
	for _, row := range v.pool {
		known[snapshotKey(row.Project, row.Name)] = true
	}

	for _, row := range v.instances {
		known[snapshotKey(row.Project, row.Name)] = true
	}

	for key, instance := range v.live {
		if instance.Config[backend.ConfigWarmPool] != "" && !known[key] && !v.inflight(instance.Project, instance.Name) {
			p.unrecorded = append(p.unrecorded, instance)
		}
	}

	byShape := map[int64][]db.PoolInstance{}
	for _, row := range v.pool {
		byShape[row.ShapeID] = append(byShape[row.ShapeID], row)
	}

	for _, shape := range v.shapes {
		remove, fill := planPool(shape, byShape[shape.ID], v, owner, now)
		p.remove = append(p.remove, remove...)
		if fill > 0 {
			d := v.deployments[shape.DeploymentID]
			p.fill = append(p.fill, poolFill{shape: shape, project: d[0], deployment: d[1], hash: poolHash(&shape), count: fill})
		}
	}

	return p
}

// planPool decides one shape's pool: which of its pool instances go, and how many to make.
func planPool(shape db.Shape, rows []db.PoolInstance, v poolView, owner string, now time.Time) ([]db.PoolInstance, int) {
	want := 0
	if shape.WarmPool != nil {
		want = shape.WarmPool.Size
	}

	hash := poolHash(&shape)
	have := 0
	var remove []db.PoolInstance
	for _, row := range rows {
		exists := v.live.has(row.Project, row.Name)
		flying := v.inflight(row.Project, row.Name)
		othersRunning := row.Owner != owner && now.Sub(row.StateChangedAt) < othersGrace
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
