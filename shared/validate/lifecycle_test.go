package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestShapeLifecycle(t *testing.T) {
	ok := []api.DeploymentShapePut{
		{},
		{Health: &api.DeploymentShapeHealth{Command: []string{"true"}}},
		{Health: &api.DeploymentShapeHealth{Command: []string{"curl", "-f", "localhost"}, Interval: "10s", Timeout: "5s", Grace: "0s", HealthyThreshold: 2, UnhealthyThreshold: 5, Replace: true, MaxUnavailable: 2}},
		{Hooks: &api.DeploymentShapeHooks{TerminateTimeout: "5m", LaunchTimeout: "0s", DefaultAction: "abandon"}},
		{Hooks: &api.DeploymentShapeHooks{}},
		{WarmPool: &api.DeploymentShapeWarmPool{Size: 2, State: "stopped"}},
		{WarmPool: &api.DeploymentShapeWarmPool{}},
	}

	for _, put := range ok {
		err := ShapeLifecycle(put)
		if err != nil {
			t.Errorf("%+v: %v", put, err)
		}
	}

	bad := map[string]api.DeploymentShapePut{
		"health.command":             {Health: &api.DeploymentShapeHealth{}},
		"health.interval":            {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "100ms"}},
		"health.timeout":             {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, Timeout: "soon"}},
		"health.grace":               {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, Grace: "-1s"}},
		"health.unhealthy_threshold": {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, UnhealthyThreshold: 1000}},
		"health.max_unavailable":     {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, MaxUnavailable: -1}},
		"health.ttl":                 {Health: &api.DeploymentShapeHealth{TTL: "10"}},
		"health.http.port":           {Health: &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 70000}}},
		"health.http.path":           {Health: &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 80, Path: "healthz"}}},
		"health.tcp.port":            {Health: &api.DeploymentShapeHealth{TCP: &api.DeploymentShapeHealthTCP{}}},
		"health.ttl (exec)":          {Health: &api.DeploymentShapeHealth{Command: []string{"true"}, TTL: "10s"}},
		"hooks.terminate_timeout":    {Hooks: &api.DeploymentShapeHooks{TerminateTimeout: "5"}},
		"hooks.default_action":       {Hooks: &api.DeploymentShapeHooks{DefaultAction: "wait"}},
		"warm_pool.size":             {WarmPool: &api.DeploymentShapeWarmPool{Size: 1000}},
		"warm_pool.state":            {WarmPool: &api.DeploymentShapeWarmPool{Size: 1, State: "frozen"}},
	}

	for field, put := range bad {
		err := ShapeLifecycle(put)
		name, _, _ := strings.Cut(field, " ")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: want an error naming it, got %v", field, err)
		}
	}
}
