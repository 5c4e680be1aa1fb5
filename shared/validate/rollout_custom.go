package validate

import (
	"fmt"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// DefaultDeployerTimeout is how long a custom rollout's deployer may run when
// rollout.custom.timeout is not set.
const DefaultDeployerTimeout = 10 * time.Minute

// DefaultDeployerCommand is what runs in the deployer instance when rollout.custom.command
// is not set.
var DefaultDeployerCommand = []string{"/usr/local/bin/deployer"}

// RolloutCustom checks the custom strategy's settings: present exactly when the strategy is
// custom, with an image.
func RolloutCustom(r api.DeploymentShapeRollout) error {
	err := rolloutHooks(r)
	if err != nil {
		return err
	}

	c := r.Custom
	if r.Strategy != api.RolloutCustom {
		if c != nil {
			return fmt.Errorf("rollout.custom is for the custom strategy: set rollout.strategy to custom or drop rollout.custom")
		}

		return nil
	}

	if c == nil || strings.TrimSpace(c.Image) == "" {
		return fmt.Errorf("the custom strategy needs rollout.custom.image: the alias or fingerprint of the deployer's image")
	}

	if len(c.Image) > 255 {
		return fmt.Errorf("rollout.custom.image is longer than 255 characters")
	}

	if len(c.Command) > 0 && c.Command[0] == "" {
		return fmt.Errorf("rollout.custom.command starts with an empty program: give the deployer's path, or drop the command for %s", DefaultDeployerCommand[0])
	}

	err = transient("custom", c.Command, c.Environment, c.Timeout)
	if err != nil {
		return err
	}

	if r.MaxSurge != "" || r.MaxUnavailable != "" || r.MinReady != "" {
		return fmt.Errorf("rollout.max_surge, max_unavailable and min_ready are for the built-in strategies: the deployer decides how instances are replaced, so drop them")
	}

	return nil
}

// transient checks what a deployer and a hook have alike: arguments, environment, timeout.
func transient(field string, command []string, env map[string]string, timeout string) error {
	for i, arg := range command {
		if strings.ContainsRune(arg, 0) {
			return fmt.Errorf("rollout.%s.command argument %d holds a NUL byte", field, i)
		}
	}

	for key := range env {
		if key == "" || strings.ContainsAny(key, "=\x00") {
			return fmt.Errorf("rollout.%s.environment key %q is not a variable name", field, key)
		}

		if strings.HasPrefix(key, "LXD_DEPLOYD_") {
			return fmt.Errorf("rollout.%s.environment key %q is reserved: the daemon sets LXD_DEPLOYD_* itself", field, key)
		}
	}

	d, err := RolloutDuration(field+".timeout", timeout, DefaultDeployerTimeout)
	if err != nil {
		return err
	}

	if d < time.Second {
		return fmt.Errorf("rollout.%s.timeout %q is too short: give at least 1s", field, timeout)
	}

	return nil
}

// rolloutHooks checks the pre and post hooks: for the built-in strategies only, each with
// an image and a command.
func rolloutHooks(r api.DeploymentShapeRollout) error {
	for field, h := range map[string]*api.DeploymentShapeRolloutHook{"pre": r.Pre, "post": r.Post} {
		if h == nil {
			continue
		}

		if r.Strategy == api.RolloutCustom {
			return fmt.Errorf("rollout.%s is for the rolling, recreate and canary strategies: a custom deployer runs its own steps, so drop rollout.%s", field, field)
		}

		if strings.TrimSpace(h.Image) == "" || len(h.Image) > 255 {
			return fmt.Errorf("rollout.%s.image is required: the alias or fingerprint of the hook's image", field)
		}

		if len(h.Command) == 0 || h.Command[0] == "" {
			return fmt.Errorf("rollout.%s.command is required: the program to run in the hook, and its arguments", field)
		}

		err := transient(field, h.Command, h.Environment, h.Timeout)
		if err != nil {
			return err
		}
	}

	return nil
}

// DeployerTimeout is a custom rollout's deployer timeout (checked by RolloutCustom).
func DeployerTimeout(c *api.DeploymentShapeRolloutCustom) time.Duration {
	if c == nil {
		return DefaultDeployerTimeout
	}

	d, err := RolloutDuration("custom.timeout", c.Timeout, DefaultDeployerTimeout)
	if err != nil {
		return DefaultDeployerTimeout
	}

	return d
}

// DeployerCommand is a custom rollout's command, the default when none is set.
func DeployerCommand(c *api.DeploymentShapeRolloutCustom) []string {
	if c == nil || len(c.Command) == 0 {
		return DefaultDeployerCommand
	}

	return c.Command
}
