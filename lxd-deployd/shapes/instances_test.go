package shapes

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// instanceCase is one instance record: a state, a hook wait, a health verdict, a revision.
type instanceCase struct {
	state, hook, health string
	outdated            bool
}

func (c instanceCase) String() string {
	return fmt.Sprintf("%s/hook=%q/health=%s/outdated=%v", c.state, c.hook, c.health, c.outdated)
}

// everyInstanceCase walks every instance state (and a state no code writes, as a record
// from an older schema would hold) with every hook, health and revision.
func everyInstanceCase() []instanceCase {
	var cases []instanceCase
	for _, state := range append(db.InstanceStates, "legacy") {
		for _, hook := range []string{"", api.LifecycleLaunchingWait, api.LifecycleTerminatingWait} {
			for _, health := range []string{api.HealthHealthy, api.HealthUnhealthy, api.HealthStarting} {
				for _, outdated := range []bool{false, true} {
					cases = append(cases, instanceCase{state, hook, health, outdated})
				}
			}
		}
	}

	return cases
}

// TestPredicatesAgreeWithSQL holds the SQL that counts instances (scaling_current, the
// metrics' counts) and the Go predicates (Counted, Outdated, Settled, Ready) to one answer
// over every instance state: each case is the one instance of its own shape, so each SQL
// count is that instance's answer.
func TestPredicatesAgreeWithSQL(t *testing.T) {
	cluster, _, _ := dbtest.OpenNode(t)
	ctx := context.Background()
	cases := everyInstanceCase()
	checks := &api.DeploymentShapeHealth{Command: []string{"true"}}
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		for n, c := range cases {
			put := api.DeploymentShapePut{ScalingMaximum: 3, Health: checks}
			shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: fmt.Sprintf("s%d", n)}, DeploymentShapePut: put})
			if err != nil {
				return err
			}

			shape, err := db.GetShape(ctx, tx, depID, fmt.Sprintf("s%d", n))
			if err != nil {
				return err
			}

			revision := shape.Revision
			if c.outdated {
				revision--
			}

			id, err := db.CreateInstance(ctx, tx, "default", shapeID, fmt.Sprintf("i%d", n), "h", revision, "test", time.Now())
			if err != nil {
				return err
			}

			// Hooks and health are recorded on created instances; the state moves last.
			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "test", time.Now())
			if err != nil {
				return err
			}

			err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: c.health})
			if err != nil {
				return err
			}

			if c.hook != "" {
				err = db.SetInstanceHook(ctx, tx, id, c.hook, nil)
				if err != nil {
					return err
				}
			}

			if c.state != db.InstanceCreated {
				err = db.SetInstanceState(ctx, tx, id, db.InstanceCreated, c.state, "test", time.Now())
				if err != nil {
					return err
				}
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var shapeRows []db.Shape
	var counts []db.ShapeCount
	var rows []db.Instance
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shapeRows, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		counts, err = db.GetShapeCounts(ctx, tx)
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	byShape := map[string]db.Shape{}
	for _, s := range shapeRows {
		byShape[s.Name] = s
	}

	countByShape := map[string]db.ShapeCount{}
	for _, c := range counts {
		countByShape[c.Shape] = c
	}

	one := func(b bool) int {
		if b {
			return 1
		}

		return 0
	}

	if len(rows) != len(cases) {
		t.Fatalf("%d instance rows for %d cases", len(rows), len(cases))
	}

	for _, row := range rows {
		var n int
		_, _ = fmt.Sscanf(row.Name, "i%d", &n)
		c := cases[n]
		shape, count := byShape[row.Shape], countByShape[row.Shape]
		counted := Counted(row)
		got := map[string][2]int{
			"scaling_current (GetShapes)": {shape.ScalingCurrent, one(counted)},
			"current (GetShapeCounts)":    {count.Current, one(counted)},
			"outdated (GetShapeCounts)":   {count.Outdated, one(counted && Outdated(row, shape.Revision))},
			"settled (GetShapeCounts)":    {count.Settled, one(counted && Ready(nil, row))},
			"ready with checks (SQL)":     {count.SettledHealthy, one(counted && Ready(checks, row))},
			"terminating (GetShapes)":     {shape.Terminating, one(row.State == db.InstanceCreated && row.Hook.Hook == api.LifecycleTerminatingWait)},
			"replacing (GetShapes)":       {shape.Replacing, one(row.State == db.InstanceReplacing)},
		}

		for what, v := range got {
			if v[0] != v[1] {
				t.Errorf("%s: %s is %d in SQL, %d in Go", c, what, v[0], v[1])
			}
		}
	}
}

func TestClamp(t *testing.T) {
	for _, c := range []struct{ target, min, max, want int }{{0, 1, 3, 1}, {2, 1, 3, 2}, {5, 1, 3, 3}, {3, 3, 3, 3}} {
		if got := Clamp(c.target, c.min, c.max); got != c.want {
			t.Errorf("Clamp(%d, %d, %d) = %d, want %d", c.target, c.min, c.max, got, c.want)
		}
	}
}

func TestReady(t *testing.T) {
	checks := &api.DeploymentShapeHealth{Command: []string{"true"}}
	created := db.Instance{State: db.InstanceCreated, Health: db.InstanceHealth{Status: api.HealthUnknown}}
	healthy := created
	healthy.Health.Status = api.HealthHealthy
	launching := healthy
	launching.Hook.Hook = api.LifecycleLaunchingWait
	creating := healthy
	creating.State = db.InstanceCreating

	tests := []struct {
		name   string
		health *api.DeploymentShapeHealth
		row    db.Instance
		ready  bool
	}{
		{"no checks: created is ready", nil, created, true},
		{"checks: not yet healthy", checks, created, false},
		{"checks: healthy", checks, healthy, true},
		{"waiting in launching:wait", nil, launching, false},
		{"still being created", nil, creating, false},
	}

	for _, test := range tests {
		if Ready(test.health, test.row) != test.ready {
			t.Errorf("%s: want ready=%v", test.name, test.ready)
		}
	}
}
