package db

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A shape's placement round-trips through create, read and update (absent stays absent),
// and the counts per member see every counted instance with its recorded location.
func TestShapePlacementAndLocations(t *testing.T) {
	c := newTestCluster(t)
	placement := &api.DeploymentShapePlacement{Targets: []string{"m1", "@gpu"}, Spread: "member", Rigor: "strict"}
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMaximum: 5, Placement: placement}
		webID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		if err != nil {
			return err
		}

		_, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "db"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 1}})
		if err != nil {
			return err
		}

		web, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		if !reflect.DeepEqual(web.Placement, placement) {
			t.Errorf("placement read back as %+v, want %+v", web.Placement, placement)
		}

		other, err := GetShape(ctx, tx, deploymentID, "db")
		if err != nil {
			return err
		}

		if other.Placement != nil {
			t.Errorf("a shape without placement reads back %+v", other.Placement)
		}

		for i, location := range []string{"m1", "m1", "m2", ""} {
			id, err := CreateInstance(ctx, tx, "default", webID, "web"+string(rune('a'+i)), "h", 1, "node1", time.Now())
			if err != nil {
				return err
			}

			err = SetInstanceLocation(ctx, tx, id, location)
			if err != nil {
				return err
			}

			if i == 1 {
				// Being deleted: no longer counted on its member.
				err = SetInstanceState(ctx, tx, id, InstanceCreating, InstanceDeleting, "node1", time.Now())
				if err != nil {
					return err
				}
			}
		}

		counts, err := GetShapeLocationCounts(ctx, tx, webID)
		if err != nil {
			return err
		}

		want := map[string]int{"m1": 1, "m2": 1, "": 1}
		if !reflect.DeepEqual(counts, want) {
			t.Errorf("counts per member %v, want %v", counts, want)
		}

		instances, err := GetInstances(ctx, tx, InstanceFilter{ShapeID: webID, Name: "webc"})
		if err != nil {
			return err
		}

		if len(instances) != 1 || instances[0].Location != "m2" {
			t.Errorf("instance webc read back as %+v, want location m2", instances)
		}

		put.Placement = nil
		err = UpdateShape(ctx, tx, webID, put)
		if err != nil {
			return err
		}

		web, err = GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		if web.Placement != nil {
			t.Errorf("placement after an update without one: %+v", web.Placement)
		}

		return nil
	})
}
