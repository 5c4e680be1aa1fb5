package fleet

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestInstanceView: an instance's status is LXD's when LXD has it; without LXD's word a
// record being created is Creating, one LXD (online) does not have is Missing, and the
// rest Unknown. Outdated compares with the shape's latest revision; limits come from LXD's
// config; the health verdict shows with its check.
func TestInstanceView(t *testing.T) {
	row := db.Instance{}
	row.Name, row.Project, row.State, row.Revision = "web-1", "default", db.InstanceCreated, 1
	creating := row
	creating.State = db.InstanceCreating
	running := &lxdapi.Instance{Status: "Running", Config: map[string]string{"limits.memory": "256MiB"}}
	cases := []struct {
		name   string
		row    db.Instance
		live   *lxdapi.Instance
		online bool
		status string
	}{
		{"live", row, running, true, "Running"},
		{"creating", creating, nil, true, "Creating"},
		{"missing", row, nil, true, "Missing"},
		{"unknown", row, nil, false, "Unknown"},
	}

	for _, c := range cases {
		shown := InstanceView(c.row, 2, c.live, c.online)
		if shown.Status != c.status || shown.Name != "web-1" || shown.InstanceURL != api.InstanceURL("default", "web-1") {
			t.Errorf("%s: %+v", c.name, shown)
		}
	}

	shown := InstanceView(row, 2, running, true)
	if !shown.Outdated || shown.Limits["limits.memory"] != "256MiB" || shown.HealthCheck != nil {
		t.Fatalf("outdated, limits, no check: %+v", shown)
	}

	if InstanceView(row, 1, running, true).Outdated {
		t.Fatal("an instance at the latest revision shows outdated")
	}

	row.Health.Status, row.Health.Stale = "passing", "the checker lost LXD"
	shown = InstanceView(row, 1, nil, true)
	if shown.Health != "passing" || shown.HealthCheck == nil || !shown.HealthCheck.Stale || shown.HealthCheck.StaleReason != "the checker lost LXD" {
		t.Fatalf("a stale health check: %+v", shown.HealthCheck)
	}
}

// TestWithLocation: LXD's location wins over the record's ("none" is no location), and an
// instance on a member LXD reports offline is unreachable, not in error.
func TestWithLocation(t *testing.T) {
	row := db.Instance{}
	row.Location = "m1"
	view := backend.ClusterView{Clustered: true, Members: []backend.ClusterMember{{Name: "m1", Status: "Online"}, {Name: "m2", Status: "Offline"}}}
	shown := api.DeploymentInstance{Status: "Running"}
	WithLocation(&shown, row, &lxdapi.Instance{Location: "none"}, view)
	if shown.Location != "m1" || shown.Status != "Running" {
		t.Fatalf("the record's member: %+v", shown)
	}

	shown = api.DeploymentInstance{Status: "Error"}
	WithLocation(&shown, row, &lxdapi.Instance{Location: "m2"}, view)
	if shown.Location != "m2" || shown.Status != api.InstanceStatusUnreachable {
		t.Fatalf("an instance on an offline member: %+v", shown)
	}
}
