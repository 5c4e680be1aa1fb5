package policy

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestDecideMemory(t *testing.T) {
	const mb = 1 << 20
	shape := func(usage ...int64) api.WebhookShapeMetrics {
		m := api.WebhookShapeMetrics{Instances: map[string]api.WebhookInstanceMetrics{}}
		for i, u := range usage {
			m.Instances[string(rune('a'+i))] = api.WebhookInstanceMetrics{Status: "Running", MemoryUsageBytes: u}
		}

		return m
	}

	bound := api.DeploymentShapeResourceBound{Minimum: "64MiB", Maximum: "512MiB"}
	policy := Shape{MemoryTarget: 0.5, Tolerance: 0.1}
	tests := []struct {
		name    string
		policy  Shape
		metrics api.WebhookShapeMetrics
		current string
		limit   string
		says    string
	}{
		{name: "off", policy: Shape{}, metrics: shape(100 * mb), current: "128MiB", says: "no memory target"},
		{name: "grow to twice the peak", policy: policy, metrics: shape(50*mb, 150*mb), current: "128MiB", limit: "300MiB", says: "peak memory use 150MiB"},
		{name: "rounded up to a MiB", policy: policy, metrics: shape(100*mb + 1), current: "128MiB", limit: "201MiB"},
		{name: "held at the maximum", policy: policy, metrics: shape(400 * mb), current: "256MiB", limit: "512MiB", says: "held at the maximum 512MiB"},
		{name: "shrink to the minimum", policy: policy, metrics: shape(4 * mb), current: "256MiB", limit: "64MiB", says: "raised to the minimum 64MiB"},
		{name: "within tolerance", policy: policy, metrics: shape(130 * mb), current: "256MiB", says: "within tolerance"},
		{name: "at the maximum already", policy: policy, metrics: shape(900 * mb), current: "512MiB", says: "within tolerance"},
		{name: "no limit yet", policy: policy, metrics: shape(100 * mb), limit: "200MiB"},
		{name: "nothing running", policy: policy, metrics: api.WebhookShapeMetrics{Instances: map[string]api.WebhookInstanceMetrics{"a": {Status: "Stopped"}}}, current: "128MiB", says: "no running instance"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideMemory(tt.policy, tt.metrics, tt.current, bound)
			if d.Limit != tt.limit || !strings.Contains(d.Why, tt.says) {
				t.Fatalf("got %+v, want limit %q saying %q", d, tt.limit, tt.says)
			}
		})
	}
}

func TestParseMemoryTarget(t *testing.T) {
	p, err := Parse([]byte("shapes:\n  web:\n    memory_target: 0.7\n"))
	if err != nil || p.Shape("web").MemoryTarget != 0.7 || !strings.Contains(p.Shape("web").String(), "memory target 70%") {
		t.Fatalf("got %+v %v", p, err)
	}

	for _, bad := range []string{"1.5", "-0.1"} {
		_, err := Parse([]byte("shapes:\n  web:\n    memory_target: " + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), "memory_target") {
			t.Fatalf("memory_target %s: %v", bad, err)
		}
	}
}
