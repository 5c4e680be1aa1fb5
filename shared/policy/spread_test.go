package policy

import (
	"reflect"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// A scale-in from 6 to 3 over three members leaves one on each, whatever the ages say;
// outside a cluster the order is the preference alone.
func TestScaleDownOrderKeepsSpread(t *testing.T) {
	now := time.Now()
	inst := func(name string, location string, age time.Duration) api.DeploymentInstance {
		return api.DeploymentInstance{Name: name, State: rules.Created, Status: "Running", Location: location, CreatedAt: now.Add(-age)}
	}

	// Newest first would take a, b and c: all of m1's and one of m2's.
	instances := []api.DeploymentInstance{
		inst("a", "m1", 1*time.Minute), inst("b", "m1", 2*time.Minute), inst("c", "m2", 3*time.Minute),
		inst("d", "m2", 4*time.Minute), inst("e", "m3", 5*time.Minute), inst("f", "m3", 6*time.Minute),
	}

	got := ScaleDownOrder(instances, 3)
	if want := []string{"a", "c", "e"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("scale-in 6 to 3 over m1..m3 deletes %v, want %v (one per member, newest each)", got, want)
	}

	// Fullest member first.
	skewed := []api.DeploymentInstance{inst("a", "m1", time.Minute), inst("b", "m2", 2*time.Minute), inst("c", "m2", 3*time.Minute), inst("d", "m2", 4*time.Minute)}
	if got := ScaleDownOrder(skewed, 2); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Fatalf("skewed: %v, want b and c from m2", got)
	}

	// Unreachable last.
	lost := inst("z", "m3", 0)
	lost.Status = api.InstanceStatusUnreachable
	withLost := append([]api.DeploymentInstance{lost}, inst("y", "m1", time.Minute))
	if got := ScaleDownOrder(withLost, 2); !reflect.DeepEqual(got, []string{"y", "z"}) {
		t.Fatalf("with an unreachable instance: %v, want y then z", got)
	}

	// Not clustered: newest first, as before.
	plain := []api.DeploymentInstance{inst("a", "", time.Minute), inst("b", "", 2*time.Minute), inst("c", "", 3*time.Minute)}
	if got := ScaleDownOrder(plain, 2); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("standalone LXD: %v, want a, b", got)
	}
}
