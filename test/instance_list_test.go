package test

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestShapeListStatuses lists a shape's instances with LXD's status of each: LXD is asked
// for the shape's instances only (a filter on the keys they were made with), and the rows
// that misses (a renamed shape, an instance deleted behind the daemon's back) get the
// project's listing.
func TestShapeListStatuses(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	names := env.scaleTo(t, 2)
	statuses := func(shape string) map[string]string {
		listed, err := env.admin.GetDeploymentShapeInstances("dep1", shape)
		must(t, err)
		result := map[string]string{}
		for _, instance := range listed {
			result[instance.Name] = instance.Status
		}

		return result
	}

	got := statuses("web")
	if len(got) != 2 || got[names[0]] != "Running" || got[names[1]] != "Running" {
		t.Fatalf("statuses %v, want both Running", got)
	}

	// The instances keep user.lxd-deployd.shape=web in LXD after the rename.
	must(t, env.admin.RenameDeploymentShape("dep1", "web", api.DeploymentShapePost{Name: "www"}))
	got = statuses("www")
	if len(got) != 2 || got[names[0]] != "Running" || got[names[1]] != "Running" {
		t.Fatalf("after a rename: statuses %v, want both Running", got)
	}

	env.deleteByHand(names[1])
	got = statuses("www")
	if got[names[0]] != "Running" || got[names[1]] != "Missing" {
		t.Fatalf("after a delete in LXD: statuses %v, want Running and Missing", got)
	}
}
