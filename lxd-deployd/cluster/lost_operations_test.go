package cluster

import (
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// TestLostOperationError: an operation is lost once its member has been offline for
// LostMemberGrace, or was removed; the message names the member and what to check.
func TestLostOperationError(t *testing.T) {
	now := time.Now()
	launch := db.Operation{Member: "m2", Operation: lxdapi.Operation{Resources: map[string][]string{
		"instances": {"/1.0/instances/web1?project=p"}, "deployment_shapes": {"/1.0/deployments/d/shapes/web?project=p"},
	}}}

	members := func(silent time.Duration) []db.Member {
		return []db.Member{{Name: "m1", HeartbeatAt: now}, {Name: "m2", HeartbeatAt: now.Add(-silent)}}
	}

	for _, silent := range []time.Duration{0, OfflineAfter + time.Second, LostMemberGrace - time.Second} {
		message, lost := lostOperationError(launch, members(silent), now)
		if lost {
			t.Fatalf("member silent for %s: settled too early: %s", silent, message)
		}
	}

	message, lost := lostOperationError(launch, members(LostMemberGrace+2*time.Second), now)
	for _, want := range []string{"member m2 went offline while running this operation (no heartbeat for 32s)", "reconcile", "kept and started", "/1.0/instances/web1?project=p", "before retrying"} {
		if !lost || !strings.Contains(message, want) {
			t.Fatalf("offline member: %v %q does not say %q", lost, message, want)
		}
	}

	rollout := db.Operation{Member: "m2", Operation: lxdapi.Operation{Resources: map[string][]string{"deployment_rollouts": {"/1.0/deployments/d/shapes/web/rollouts/3"}}}}
	message, lost = lostOperationError(rollout, members(0)[:1], now)
	for _, want := range []string{"member m2 was removed from the cluster", "check /1.0/deployments/d/shapes/web/rollouts/3 before retrying"} {
		if !lost || !strings.Contains(message, want) {
			t.Fatalf("removed member: %v %q does not say %q", lost, message, want)
		}
	}

	if strings.Contains(message, "reconcile") {
		t.Fatalf("reconcile has nothing to repair for an operation without instances: %q", message)
	}
}
