package fleet

import (
	"context"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestResizeApplyRefusesHostileLimits (issue 32): an in-place update (a resize, the
// in-place pass, a rollout in place) of a limits.cpu past the ceiling, kept in a template
// from before it, fails for that instance without asking LXD (the nil client is not used).
func TestResizeApplyRefusesHostileLimits(t *testing.T) {
	step := ResizeStep{Row: db.Instance{Name: "web-1"}, Limits: map[string]string{"limits.cpu": "0-3000000"}}
	result := Resizer{}.apply(context.Background(), nil, ResizeTarget{}, 2, "", step)
	if result.Result != api.ResizeFailed || !strings.Contains(result.Reason, "not sent to LXD") {
		t.Fatalf("got %+v", result)
	}
}
