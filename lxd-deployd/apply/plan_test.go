package apply

import (
	"reflect"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func testShape(id int64, name string, alias string, maximum int) db.Shape {
	return db.Shape{ID: id, DeploymentShape: api.DeploymentShape{
		DeploymentShapePost: api.DeploymentShapePost{Name: name},
		DeploymentShapePut: api.DeploymentShapePut{
			Config:           map[string]string{},
			InstanceTemplate: lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: alias}},
			ScalingMaximum:   maximum,
		},
		ScalingCurrent: 2,
	}}
}

func TestPlanShapes(t *testing.T) {
	current := []db.Shape{
		testShape(1, "web", "busybox", 3),
		testShape(2, "db", "busybox", 1),
		testShape(3, "old", "busybox", 1),
		testShape(4, "debug", "busybox", 1),
	}

	web := current[0].Writable()
	web.ScalingMaximum = 5
	web.InstanceTemplate.Source.Alias = "debian/12"
	web.Config = map[string]string{"user.tier": "front"}
	web.Description = "web servers"
	desired := map[string]api.DeploymentShapePut{
		"web": web,
		"db":  current[1].Writable(),
		"api": testShape(0, "api", "busybox", 2).DeploymentShapePut,
	}

	// "debug" was never in a manifest: it is left alone; "old" was, and goes.
	owned := map[string]bool{"web": true, "db": true, "old": true}
	p := planShapes(current, map[int64]int{3: 2}, owned, desired, []string{"db", "web", "api"})

	if len(p.create) != 1 || p.create[0].Name != "api" || p.create[0].ScalingMaximum != 2 {
		t.Errorf("create = %+v", p.create)
	}

	if !reflect.DeepEqual(p.unchanged, []string{"db"}) || !reflect.DeepEqual(p.unmanaged, []string{"debug"}) {
		t.Errorf("unchanged = %v, unmanaged = %v", p.unchanged, p.unmanaged)
	}

	if len(p.delete) != 1 || p.delete[0] != (shapeDeletion{id: 3, name: "old", instances: 2}) {
		t.Errorf("delete = %+v", p.delete)
	}

	if len(p.update) != 1 || p.update[0].id != 1 || p.update[0].before.ScalingCurrent != 2 {
		t.Fatalf("update = %+v", p.update)
	}

	want := []api.DeploymentFieldChange{
		{Field: "description", Old: "", New: "web servers"},
		{Field: "config.user.tier", Old: nil, New: "front"},
		{Field: "instance_template.source.alias", Old: "busybox", New: "debian/12"},
		{Field: "scaling_maximum", Old: 3.0, New: 5.0},
	}

	if !reflect.DeepEqual(p.update[0].changes, want) {
		t.Errorf("changes = %#v\nwant %#v", p.update[0].changes, want)
	}

	// Without a previous manifest nothing is deleted.
	p = planShapes(current, nil, nil, desired, []string{"db", "web", "api"})
	if len(p.delete) != 0 || len(p.unmanaged) != 2 {
		t.Errorf("without ownership: delete %v, unmanaged %v", p.delete, p.unmanaged)
	}
}
