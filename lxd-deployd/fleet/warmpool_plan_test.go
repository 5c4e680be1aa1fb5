package fleet

import (
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestPlanPool walks a pool's rows through every state and owner: kept up to the pool's
// size when ready, current and in LXD; left alone while a launch takes them or another live
// daemon makes them; removed when outdated, surplus, vanished or left by a crash.
func TestPlanPool(t *testing.T) {
	now := time.Now()
	shape := db.Shape{ID: 1, DeploymentID: 3}
	shape.Name = "web"
	shape.WarmPool = &api.DeploymentShapeWarmPool{Size: 2}
	hash := PoolHash(&shape)
	row := func(name string, state string, owner string, template string, age time.Duration) db.PoolInstance {
		return db.PoolInstance{ShapeID: 1, Project: "default", Name: name, State: state, Owner: owner, TemplateHash: template, StateChangedAt: now.Add(-age)}
	}

	cases := []struct {
		name   string
		Rows   []db.PoolInstance
		Live   []string
		flying []string
		Remove []string
		Fill   int
	}{
		{"empty pool", nil, nil, nil, nil, 2},
		{"ready and current", []db.PoolInstance{row("p1", db.PoolReady, "me", hash, 0)}, []string{"p1"}, nil, nil, 1},
		{"outdated", []db.PoolInstance{row("p1", db.PoolReady, "me", "old", 0)}, []string{"p1"}, nil, []string{"p1"}, 2},
		{"vanished from LXD", []db.PoolInstance{row("p1", db.PoolReady, "me", hash, 0)}, nil, nil, []string{"p1"}, 2},
		{"surplus", []db.PoolInstance{row("p1", db.PoolReady, "me", hash, 0), row("p2", db.PoolReady, "me", hash, 0), row("p3", db.PoolReady, "me", hash, 0)}, []string{"p1", "p2", "p3"}, nil, []string{"p3"}, 0},
		{"being made here", []db.PoolInstance{row("p1", db.PoolCreating, "me", hash, 0)}, nil, []string{"p1"}, nil, 1},
		{"left creating by a crash", []db.PoolInstance{row("p1", db.PoolCreating, "me", hash, 0)}, nil, nil, []string{"p1"}, 2},
		{"another daemon makes it", []db.PoolInstance{row("p1", db.PoolCreating, "other", hash, time.Minute)}, nil, nil, nil, 1},
		{"another daemon's, past its grace", []db.PoolInstance{row("p1", db.PoolCreating, "other", hash, OthersGrace)}, nil, nil, []string{"p1"}, 2},
		{"taken by a launch here", []db.PoolInstance{row("p1", db.PoolTaking, "me", hash, 0)}, []string{"p1"}, []string{"p1"}, nil, 2},
		{"taking left by a crash", []db.PoolInstance{row("p1", db.PoolTaking, "me", hash, 0)}, []string{"p1"}, nil, []string{"p1"}, 2},
	}

	for _, c := range cases {
		v := PoolView{Live: Snapshot{}, Inflight: func(project string, name string) bool {
			for _, f := range c.flying {
				if f == name {
					return true
				}
			}

			return false
		}}
		for _, name := range c.Live {
			v.Live[SnapshotKey("default", name)] = lxdapi.Instance{Name: name, Project: "default"}
		}

		remove, fill := PlanPool(shape, c.Rows, v, "me", now)
		var removed []string
		for _, r := range remove {
			removed = append(removed, r.Name)
		}

		if fill != c.Fill || len(removed) != len(c.Remove) || (len(removed) > 0 && removed[0] != c.Remove[0]) {
			t.Errorf("%s: remove %v fill %d, want remove %v fill %d", c.name, removed, fill, c.Remove, c.Fill)
		}
	}
}

// TestPlanPoolsUnrecorded: a tagged pool instance with no pool or instance record goes,
// unless this daemon is working on it.
func TestPlanPoolsUnrecorded(t *testing.T) {
	tagged := func(name string) lxdapi.Instance {
		return lxdapi.Instance{Name: name, Project: "default", Config: map[string]string{backend.ConfigWarmPool: "web"}}
	}

	v := PoolView{
		Pool:      []db.PoolInstance{{Project: "default", Name: "recorded", State: db.PoolReady}},
		Instances: []db.Instance{{Project: "default", Name: "just-taken", State: db.InstanceCreated}},
		Live: Snapshot{
			"default/recorded":   tagged("recorded"),
			"default/just-taken": tagged("just-taken"),
			"default/stray":      tagged("stray"),
			"default/flying":     tagged("flying"),
			"default/plain":      {Name: "plain", Project: "default", Config: map[string]string{}},
		},
		Inflight: func(project string, name string) bool { return name == "flying" },
	}

	p := PlanPools(v, "me", time.Now())
	if len(p.Unrecorded) != 1 || p.Unrecorded[0].Name != "stray" {
		t.Fatalf("unrecorded %v, want stray only", p.Unrecorded)
	}
}
