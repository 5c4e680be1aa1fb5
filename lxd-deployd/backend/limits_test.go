package backend

import (
	"context"
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestSafeLimits (issue 32): a template kept from before the CPU ceiling is never sent to
// LXD: the create and the warm pool's take refuse it before the client is used (a nil
// client here would panic).
func TestSafeLimits(t *testing.T) {
	hostile := lxdapi.InstancesPost{Name: "web-1", InstancePut: lxdapi.InstancePut{Config: map[string]string{"limits.cpu": "0-9223372036854775806,0-9223372036854775806,0-3"}}}
	err := CreateInstance(context.Background(), nil, "default", hostile)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "not sent to LXD") {
		t.Fatalf("create with a hostile limits.cpu: %v", err)
	}

	_, err = TakePoolInstance(context.Background(), nil, "default", "web-pool-1", hostile)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a warm pool take with a hostile limits.cpu: %v", err)
	}

	for _, ok := range []string{"", "2", "0-3"} {
		err = SafeLimits(map[string]string{"limits.cpu": ok})
		if err != nil {
			t.Fatalf("limits.cpu %q: %v", ok, err)
		}
	}
}
