package shapes

import (
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func boundedShape(config map[string]string) api.DeploymentShapePut {
	return api.DeploymentShapePut{
		InstanceTemplate: lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Config: config}},
		ResourceBounds: map[string]api.DeploymentShapeResourceBound{
			api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"},
			api.LimitCPU:    {Minimum: "1", Maximum: "4"},
		},
	}
}

func TestResize(t *testing.T) {
	tests := []struct {
		name   string
		req    api.DeploymentShapeResourcesPut
		status int    // 0 for success
		says   string // in the error
		memory string // the template's limits.memory afterwards
	}{
		{name: "within", req: api.DeploymentShapeResourcesPut{Memory: "256MiB"}, memory: "256MiB"},
		{name: "at the maximum", req: api.DeploymentShapeResourcesPut{Memory: "512MiB", CPU: "4"}, memory: "512MiB"},
		{name: "above the maximum", req: api.DeploymentShapeResourcesPut{Memory: "1GiB"}, status: http.StatusConflict, says: `resource_bounds maximum (512MiB): raise resource_bounds["limits.memory"].maximum`},
		{name: "below the minimum", req: api.DeploymentShapeResourcesPut{Memory: "32MiB"}, status: http.StatusConflict, says: "minimum (64MiB)"},
		{name: "cpu above", req: api.DeploymentShapeResourcesPut{CPU: "8"}, status: http.StatusConflict, says: "limits.cpu 8 is above"},
		{name: "nothing", req: api.DeploymentShapeResourcesPut{Reason: "x"}, status: http.StatusBadRequest, says: "needs limits.cpu"},
		{name: "percentage", req: api.DeploymentShapeResourcesPut{Memory: "50%"}, status: http.StatusBadRequest, says: "absolute size"},
		{name: "not a size", req: api.DeploymentShapeResourcesPut{Memory: "lots"}, status: http.StatusBadRequest, says: "not a size"},
		{name: "not a count", req: api.DeploymentShapeResourcesPut{CPU: "0"}, status: http.StatusBadRequest, says: "not a CPU count"},
		// Issue 32: the old count overflowed to 2 (within 1..4), and LXD grew to 3 GiB
		// expanding the ranges; a plain wide range cost it 300 MiB.
		{name: "cpu set overflowing", req: api.DeploymentShapeResourcesPut{CPU: "0-9223372036854775806,0-9223372036854775806,0-3"}, status: http.StatusBadRequest, says: "is not a CPU number from 0 to 4095"},
		{name: "cpu set too wide", req: api.DeploymentShapeResourcesPut{CPU: "0-3000000"}, status: http.StatusBadRequest, says: "is not a CPU number from 0 to 4095"},
		{name: "cpu set within", req: api.DeploymentShapeResourcesPut{CPU: "0-1,3", Memory: "128MiB"}, memory: "128MiB"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := boundedShape(map[string]string{"limits.memory": "128MiB"})
			after, err := Resize(before, tt.req, true)
			if tt.status != 0 {
				if !lxdapi.StatusErrorCheck(err, tt.status) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("want a %d saying %q, got %v", tt.status, tt.says, err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if after.InstanceTemplate.Config["limits.memory"] != tt.memory || before.InstanceTemplate.Config["limits.memory"] != "128MiB" {
				t.Fatalf("template now %v, before %v", after.InstanceTemplate.Config, before.InstanceTemplate.Config)
			}
		})
	}
}

func TestLiveChanges(t *testing.T) {
	base := boundedShape(map[string]string{"limits.memory": "128MiB", "limits.cpu": "1", "user.x": "a"})
	tests := []struct {
		name   string
		change func(p *api.DeploymentShapePut)
		live   map[string]string
		ok     bool
	}{
		{name: "nothing", change: func(p *api.DeploymentShapePut) {}, live: map[string]string{}, ok: true},
		{name: "memory", change: func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config["limits.memory"] = "256MiB" }, live: map[string]string{"limits.memory": "256MiB"}, ok: true},
		{name: "cpu and bounds", change: func(p *api.DeploymentShapePut) {
			p.InstanceTemplate.Config["limits.cpu"] = "2"
			p.ResourceBounds = nil
			p.ScalingMaximum = 9
		}, live: map[string]string{"limits.cpu": "2"}, ok: true},
		{name: "removed limit", change: func(p *api.DeploymentShapePut) { delete(p.InstanceTemplate.Config, "limits.cpu") }, live: map[string]string{"limits.cpu": ""}, ok: true},
		{name: "processes", change: func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config["limits.processes"] = "100" }, live: map[string]string{"limits.processes": "100"}, ok: true},
		{name: "user key", change: func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config["user.x"] = "b" }},
		{name: "memory and image", change: func(p *api.DeploymentShapePut) {
			p.InstanceTemplate.Config["limits.memory"] = "256MiB"
			p.InstanceTemplate.Source.Alias = "other"
		}},
		{name: "kernel limit", change: func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config["limits.kernel.nofile"] = "10" }},
		{name: "shape config", change: func(p *api.DeploymentShapePut) { p.Config = map[string]string{"user.y": "1"} }},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := boundedShape(map[string]string{"limits.memory": "128MiB", "limits.cpu": "1", "user.x": "a"})
			tt.change(&after)
			live, ok := LiveChanges(base, after)
			if ok != tt.ok || len(live) != len(tt.live) {
				t.Fatalf("got %v %v, want %v %v", live, ok, tt.live, tt.ok)
			}

			for k, v := range tt.live {
				if live[k] != v {
					t.Fatalf("got %v, want %v", live, tt.live)
				}
			}
		})
	}
}

func TestSafeMemory(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		value string
		usage int64
		ok    bool
	}{
		{"", 900 * mib, true},        // no limit
		{"256MiB", 100 * mib, true},  // 100 + 16 < 256
		{"64MiB", 100 * mib, false},  // below the usage: the case
		{"112MiB", 100 * mib, false}, // within the 16MiB margin
		{"116MiB", 100 * mib, true},  // exactly usage + margin
		{"1GiB", 950 * mib, false},   // 10% margin (95MiB) beats 16MiB
		{"1100MiB", 950 * mib, true}, // 950 + 95 < 1100
		{"64MiB", 4 * mib, true},     // an idle busybox
		{"lots", 1, false},           // unreadable: never applied
		{"100MiB", 0, true},          // a stopped instance uses nothing
		{"16MiB", 0, true},           // margin alone fits
		{"15MiB", 0, false},          // margin alone does not
	}

	for _, tt := range tests {
		ok, why := SafeMemory(tt.value, tt.usage)
		if ok != tt.ok || (!ok && why == "") {
			t.Errorf("SafeMemory(%q, %d) = %v %q, want %v", tt.value, tt.usage, ok, why, tt.ok)
		}
	}

	_, why := SafeMemory("64MiB", 100*mib)
	if !strings.Contains(why, "memory usage 100MiB plus margin 16MiB is above the new limit 64MiB") {
		t.Fatalf("reason %q", why)
	}
}

func TestVMMemory(t *testing.T) {
	ok, why := VMMemory("2GiB", "1GiB")
	if ok || !strings.Contains(why, "cannot raise its memory live") {
		t.Fatalf("raise past boot: %v %q", ok, why)
	}

	for _, c := range [][2]string{{"512MiB", "1GiB"}, {"1GiB", "1GiB"}, {"", "1GiB"}, {"2GiB", ""}} {
		ok, _ := VMMemory(c[0], c[1])
		if !ok {
			t.Fatalf("VMMemory(%q, %q) refused", c[0], c[1])
		}
	}
}

// TestResizeUnbounded (issue 32, item 8): a governor may resize only a limit the shape
// bounds (403 otherwise, the template unchanged); an admin may resize either, within
// LXD's rules and the CPU ceiling.
func TestResizeUnbounded(t *testing.T) {
	before := api.DeploymentShapePut{
		InstanceTemplate: lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Config: map[string]string{"limits.memory": "128MiB"}}},
		ResourceBounds:   map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Maximum: "512MiB"}},
	}

	for _, req := range []api.DeploymentShapeResourcesPut{{CPU: "4096"}, {CPU: "2", Memory: "256MiB"}} {
		_, err := Resize(before, req, true)
		if !lxdapi.StatusErrorCheck(err, http.StatusForbidden) || !strings.Contains(err.Error(), `an admin sets resource_bounds["limits.cpu"]`) {
			t.Fatalf("a governor's resize of the unbounded limits.cpu (%+v): %v", req, err)
		}
	}

	delete(before.ResourceBounds, api.LimitMemory)
	_, err := Resize(before, api.DeploymentShapeResourcesPut{Memory: "1EiB"}, true)
	if !lxdapi.StatusErrorCheck(err, http.StatusForbidden) || !strings.Contains(err.Error(), "limits.memory has no resource_bounds") {
		t.Fatalf("a governor's resize of an unbounded limits.memory to 1EiB: %v", err)
	}

	after, err := Resize(before, api.DeploymentShapeResourcesPut{CPU: "4", Memory: "1GiB"}, false)
	if err != nil || after.InstanceTemplate.Config["limits.cpu"] != "4" || after.InstanceTemplate.Config["limits.memory"] != "1GiB" {
		t.Fatalf("an admin's resize without bounds: %v %v", after.InstanceTemplate.Config, err)
	}

	_, err = Resize(before, api.DeploymentShapeResourcesPut{CPU: "0-3000000"}, false)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("an admin's resize past the CPU ceiling: %v", err)
	}
}
