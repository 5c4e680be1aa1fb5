package templates

import (
	"testing"
)

// A templated shape may carry the health, hooks and warm_pool objects like one made through
// the API: they are fields of the writable shape, decoded strictly.
func TestShapeLifecycleFields(t *testing.T) {
	put, path, err := decodeShape(map[string]any{
		"instance_template": map[string]any{"source": map[string]any{"type": "image", "alias": "busybox"}},
		"scaling_maximum":   3,
		"health":            map[string]any{"command": []any{"test", "-f", "/run/ready"}, "interval": "5s", "replace": true},
		"hooks":             map[string]any{"terminate_timeout": "2m"},
		"warm_pool":         map[string]any{"size": 2},
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}

	if put.Health == nil || len(put.Health.Command) != 3 || !put.Health.Replace || put.Hooks.TerminateTimeout != "2m" || put.WarmPool.Size != 2 {
		t.Fatalf("decoded: %+v %+v %+v", put.Health, put.Hooks, put.WarmPool)
	}

	_, path, err = decodeShape(map[string]any{"health": map[string]any{"comand": []any{"true"}}})
	if err == nil {
		t.Fatalf("a misspelt health field must be refused (%s)", path)
	}
}
