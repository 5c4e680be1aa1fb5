package fleet

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// TestOthersInFlux: another member's launch is left alone only while that member runs the
// process that started it.
func TestOthersInFlux(t *testing.T) {
	const offlineAfter = 5 * time.Second // as the daemon passes it (cluster.go)
	now := time.Now()
	row := db.Instance{State: db.InstanceCreating, Owner: "db2", StateChangedAt: now.Add(-time.Minute)}
	alive := db.Member{DatabaseAddress: "db2", StartedAt: now.Add(-time.Hour), HeartbeatAt: now}
	cases := []struct {
		name    string
		Row     db.Instance
		Members []db.Member
		want    bool
	}{
		{"another member's launch in progress", row, []db.Member{alive}, true},
		{"this member's own record", db.Instance{State: db.InstanceCreating, Owner: "db1", StateChangedAt: row.StateChangedAt}, []db.Member{alive}, false},
		{"a settled record", db.Instance{State: db.InstanceCreated, Owner: "db2", StateChangedAt: row.StateChangedAt}, []db.Member{alive}, false},
		{"past the grace period", db.Instance{State: db.InstanceDeleting, Owner: "db2", StateChangedAt: now.Add(-OthersGrace)}, []db.Member{alive}, false},
		{"owner offline", row, []db.Member{{DatabaseAddress: "db2", StartedAt: alive.StartedAt, HeartbeatAt: now.Add(-offlineAfter)}}, false},
		{"owner restarted since", row, []db.Member{{DatabaseAddress: "db2", StartedAt: now.Add(-time.Second), HeartbeatAt: now}}, false},
		{"owner removed", row, nil, false},
	}

	for _, c := range cases {
		if got := OthersInFlux(c.Row, "db1", c.Members, offlineAfter, now); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
