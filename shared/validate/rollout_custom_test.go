package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestRolloutCustom(t *testing.T) {
	custom := func(c api.DeploymentShapeRolloutCustom) api.DeploymentShapeRollout {
		return api.DeploymentShapeRollout{Strategy: api.RolloutCustom, Custom: &c}
	}

	for _, tc := range []struct {
		name   string
		in     api.DeploymentShapeRollout
		reject string
	}{
		{"ok", custom(api.DeploymentShapeRolloutCustom{Image: "deployer", Timeout: "5m", Command: []string{"/d", "-x"}, Environment: map[string]string{"A": "b"}}), ""},
		{"defaults", custom(api.DeploymentShapeRolloutCustom{Image: "deployer"}), ""},
		{"no custom", api.DeploymentShapeRollout{Strategy: api.RolloutCustom}, "rollout.custom.image"},
		{"blank image", custom(api.DeploymentShapeRolloutCustom{Image: " "}), "rollout.custom.image"},
		{"custom on rolling", api.DeploymentShapeRollout{Custom: &api.DeploymentShapeRolloutCustom{Image: "d"}}, "set rollout.strategy to custom"},
		{"empty program", custom(api.DeploymentShapeRolloutCustom{Image: "d", Command: []string{""}}), "empty program"},
		{"reserved env", custom(api.DeploymentShapeRolloutCustom{Image: "d", Environment: map[string]string{"LXD_DEPLOYD_X": "1"}}), "reserved"},
		{"bad env", custom(api.DeploymentShapeRolloutCustom{Image: "d", Environment: map[string]string{"A=B": "1"}}), "not a variable name"},
		{"bad timeout", custom(api.DeploymentShapeRolloutCustom{Image: "d", Timeout: "soon"}), "custom.timeout"},
		{"short timeout", custom(api.DeploymentShapeRolloutCustom{Image: "d", Timeout: "10ms"}), "too short"},
		{"hooks", api.DeploymentShapeRollout{Strategy: api.RolloutRecreate, Pre: &api.DeploymentShapeRolloutHook{Image: "m", Command: []string{"/m"}}, Post: &api.DeploymentShapeRolloutHook{Image: "m", Command: []string{"/m"}, Timeout: "1m"}}, ""},
		{"hook on custom", api.DeploymentShapeRollout{Strategy: api.RolloutCustom, Custom: &api.DeploymentShapeRolloutCustom{Image: "d"}, Pre: &api.DeploymentShapeRolloutHook{Image: "m", Command: []string{"/m"}}}, "a custom deployer runs its own steps"},
		{"hook without command", api.DeploymentShapeRollout{Post: &api.DeploymentShapeRolloutHook{Image: "m"}}, "rollout.post.command is required"},
		{"hook without image", api.DeploymentShapeRollout{Pre: &api.DeploymentShapeRolloutHook{Command: []string{"/m"}}}, "rollout.pre.image is required"},
		{"hook env", api.DeploymentShapeRollout{Pre: &api.DeploymentShapeRolloutHook{Image: "m", Command: []string{"/m"}, Environment: map[string]string{"LXD_DEPLOYD_A": "x"}}}, "rollout.pre.environment"},
		{"surge", api.DeploymentShapeRollout{Strategy: api.RolloutCustom, MaxSurge: "2", Custom: &api.DeploymentShapeRolloutCustom{Image: "d"}}, "built-in strategies"},
	} {
		err := Rollout(tc.in)
		if tc.reject == "" && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}

		if tc.reject != "" && (err == nil || !strings.Contains(err.Error(), tc.reject)) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.reject)
		}
	}

	if DeployerTimeout(nil) != DefaultDeployerTimeout || DeployerCommand(&api.DeploymentShapeRolloutCustom{})[0] != "/usr/local/bin/deployer" {
		t.Fatal("defaults")
	}
}
