package apply

import (
	"reflect"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestTypes walks nested layouts depth first: each resource with its path, "all" for every
// type, and the types grouped with their deployments named once each.
func TestTypes(t *testing.T) {
	layout := func(deployment string, resources ...api.DeploymentManifestResource) db.ManifestLayout {
		l := db.ManifestLayout{Deployment: deployment, Manifest: "manifest-1"}
		l.Layout.Resources = resources
		return l
	}

	web := api.DeploymentManifestResource{Name: "web", Type: "shape"}
	app := api.DeploymentManifestResource{Name: "app", Type: "app.jinja", Resources: []api.DeploymentManifestResource{web, {Name: "db", Type: "shape"}}}
	layouts := []db.ManifestLayout{layout("shop", app), layout("blog", web)}

	shapes := TypeInstances(layouts, "shape")
	paths := []string{}
	for _, i := range shapes {
		paths = append(paths, i.Deployment+" "+i.Name+" "+i.Path)
	}

	want := []string{"shop web $.resources[0].resources[0]", "shop db $.resources[0].resources[1]", "blog web $.resources[0]"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("shape instances = %v, want %v", paths, want)
	}

	if all := TypeInstances(layouts, AllTypes); len(all) != 4 || all[0].Path != "$.resources[0]" {
		t.Errorf("all instances = %+v", all)
	}

	if none := TypeInstances(layouts, "nope.jinja"); none == nil || len(none) != 0 {
		t.Errorf("instances of an unused type = %#v, want an empty list", none)
	}

	types := Types(layouts)
	if len(types) != 2 || types[0].Name != "app.jinja" || !types[0].Template || types[1].Template || types[1].Instances != 3 || !reflect.DeepEqual(types[1].Deployments, []string{"shop", "blog"}) {
		t.Errorf("types = %+v", types)
	}
}
