package cluster

import (
	"path/filepath"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// TestPlanClusterCertificate: a member accepts a new cluster certificate at once, presents
// it only when every member accepts it, and the old one is retired only when every member
// presents the new one.
func TestPlanClusterCertificate(t *testing.T) {
	dir := t.TempDir()
	err := GenerateClusterCertificate(filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key"))
	if err != nil {
		t.Fatal(err)
	}

	identity, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}

	_, _, current := identity.PEM()
	rows := []db.ClusterCertificate{{ID: 1, Fingerprint: current, PrivateKey: "k"}, {ID: 2, Fingerprint: "new", PrivateKey: "k"}}
	member := func(address string, accepted string, presented string) db.Member {
		return db.Member{Name: address, DatabaseAddress: address, ClusterAccepted: accepted, ClusterFingerprint: presented}
	}

	tests := []struct {
		name            string
		members         []db.Member
		present, retire bool
	}{
		{"the other member has not accepted it yet", []db.Member{member("self", "", current), member("b", "", current)}, false, false},
		{"every member accepts it: present it", []db.Member{member("self", "", current), member("b", "new", current)}, true, false},
		{"the last to present it retires the old one", []db.Member{member("self", "new", current), member("b", "new", "new")}, true, true},
		{"a removed member holds nothing up", []db.Member{member("self", "new", current)}, true, true},
		{"an offline member holds the rotation", []db.Member{member("self", "new", current), member("b", "new", "new"), member("offline", "", current)}, false, false},
	}

	for _, test := range tests {
		plan := planClusterCertificate(rows, test.members, "self", identity)
		if (plan.present != nil) != test.present || plan.retire != test.retire || plan.newest.ID != 2 {
			t.Errorf("%s: present %v, retire %v; want %v, %v", test.name, plan.present != nil, plan.retire, test.present, test.retire)
		}
	}

	// Once it presents the newest, a member retires the old one when all others do too.
	presenting := []db.ClusterCertificate{{ID: 2, Fingerprint: current, PrivateKey: "k"}}
	plan := planClusterCertificate(append([]db.ClusterCertificate{{ID: 1, Fingerprint: "old"}}, presenting...), []db.Member{member("self", current, current), member("b", current, current)}, "self", identity)
	if plan.present != nil || !plan.retire {
		t.Errorf("all present the newest: present %v, retire %v", plan.present != nil, plan.retire)
	}
}
