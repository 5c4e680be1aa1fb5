package fleet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The loops read only the rows they can act on (db/instances_care.go). These tests hold
// each narrow read to the planner's answer over every row: records in every state, health,
// hook, location and revision, in a shape with health.replace and one without.

// careRows writes those records and returns the database, the shapes and every row.
func careRows(t *testing.T) (*db.Cluster, []db.Shape, []db.Instance) {
	t.Helper()
	c := dbtest.Open(t)
	ctx := context.Background()
	now := time.Now()
	var all []db.Instance
	var shapeList []db.Shape
	err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		for _, health := range []string{`,"health":{"kind":"exec","command":["true"],"replace":true}`, ""} {
			var post api.DeploymentShapesPost
			name := fmt.Sprintf("care%d", len(health))
			err = json.Unmarshal([]byte(`{"name":"`+name+`","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":0,"scaling_maximum":1000`+health+`}`), &post)
			if err != nil {
				return err
			}

			shapeID, err := db.CreateShape(ctx, tx, deploymentID, post)
			if err != nil {
				return err
			}

			err = db.SetShapeRevision(ctx, tx, shapeID, 2)
			if err != nil {
				return err
			}

			i := 0
			for _, state := range db.InstanceStates {
				for _, status := range []string{api.HealthHealthy, api.HealthUnhealthy} {
					for _, hook := range []string{"", api.LifecycleLaunchingWait, api.LifecycleTerminatingWait} {
						for _, location := range []string{"", "m1", "m2", "gone"} {
							for _, revision := range []int{1, 2} {
								i++
								id, err := db.CreateInstance(ctx, tx, "default", shapeID, fmt.Sprintf("%s-%d", name, i), "h", revision, "other", now)
								if err != nil {
									return err
								}

								err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "other", now)
								if err != nil {
									return err
								}

								err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: status, CheckedAt: &now})
								if err != nil {
									return err
								}

								if hook != "" {
									deadline := now.Add(time.Hour)
									err = db.SetInstanceHook(ctx, tx, id, hook, &deadline)
									if err != nil {
										return err
									}
								}

								if location != "" {
									err = db.MoveInstanceLocation(ctx, tx, id, "", location)
									if err != nil {
										return err
									}
								}

								if state != db.InstanceCreated {
									err = db.SetInstanceState(ctx, tx, id, db.InstanceCreated, state, "other", now.Add(-time.Hour))
									if err != nil {
										return err
									}
								}
							}
						}
					}
				}
			}
		}

		shapeList, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		all, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return c, shapeList, all
}

func TestHealCandidatesPlanAsAllRows(t *testing.T) {
	c, shapeList, all := careRows(t)
	clusters := map[string][]shapes.Member{
		"no cluster":           nil,
		"m2 offline":           {{Name: "m1", Online: true}, {Name: "m2"}},
		"all online":           {{Name: "m1", Online: true}, {Name: "m2", Online: true}},
		"no member online":     {{Name: "m1"}, {Name: "m2"}},
		"gone is a member now": {{Name: "m1", Online: true}, {Name: "m2", Online: true}, {Name: "gone", Online: true}},
	}

	now := time.Now()
	for name, members := range clusters {
		t.Run(name, func(t *testing.T) {
			var candidates []db.Instance
			err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				var err error
				candidates, err = healCandidates(ctx, tx, shapeList, members)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}

			unreachable := func(location string) bool { return shapes.Unreachable(location, members) }
			want := PlanHealing(shapeList, all, map[int64]bool{}, "me", now, unreachable)
			got := PlanHealing(shapeList, candidates, map[int64]bool{}, "me", now, unreachable)
			if len(want) == 0 {
				t.Fatal("the rows hold no step: the test proves nothing")
			}

			if !reflect.DeepEqual(stepKeys(got), stepKeys(want)) {
				t.Fatalf("planned from the candidates: %v\nplanned from every row: %v", stepKeys(got), stepKeys(want))
			}

			if (members == nil || name == "all online") && len(candidates) >= len(all)/2 {
				t.Fatalf("%d candidates of %d rows: the read is not narrow", len(candidates), len(all))
			}
		})
	}
}

func stepKeys(steps []HealStep) []string {
	var keys []string
	for _, s := range steps {
		keys = append(keys, fmt.Sprintf("%s finish=%v %s", s.Row.Name, s.Finish, s.Cause))
	}

	slices.Sort(keys)
	return keys
}

func TestInstancesInHooksAreTheWaitingRows(t *testing.T) {
	c, _, all := careRows(t)
	var want []string
	for _, row := range all {
		if row.State == db.InstanceCreated && row.Hook.Hook != "" {
			want = append(want, row.Name)
		}
	}

	var got []string
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := db.GetInstancesInHooks(ctx, tx)
		for _, row := range rows {
			got = append(got, row.Name)
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("waiting rows %v, want %v", got, want)
	}
}

func TestOutdatedShapeIDsAsShapesOutdated(t *testing.T) {
	c, shapeList, all := careRows(t)
	latest := map[int64]int{}
	for _, s := range shapeList {
		latest[s.ID] = s.Revision
	}

	for _, last := range []bool{false, true} {
		want := []int64{}
		for _, row := range all {
			if row.State == db.InstanceCreated && shapes.Outdated(row, latest[row.ShapeID]) && !slices.Contains(want, row.ShapeID) {
				want = append(want, row.ShapeID)
			}
		}

		var got []int64
		err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			var err error
			got, err = db.GetOutdatedShapeIDs(ctx, tx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("shapes with outdated instances %v, want %v (latest %v)", got, want, latest)
		}

		if last {
			break
		}

		// The other way round: no shape is ahead of its instances.
		err = c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			for _, s := range shapeList {
				err := db.SetShapeRevision(ctx, tx, s.ID, 1)
				if err != nil {
					return err
				}

				latest[s.ID] = 1
			}

			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
