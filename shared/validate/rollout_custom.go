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

	for i, arg := range c.Command {
		if i == 0 && arg == "" {
			return fmt.Errorf("rollout.custom.command starts with an empty program: give the deployer's path, or drop the command for %s", DefaultDeployerCommand[0])
		}

		if strings.ContainsRune(arg, 0) {
			return fmt.Errorf("rollout.custom.command argument %d holds a NUL byte", i)
		}
	}

	for key := range c.Environment {
		if key == "" || strings.ContainsAny(key, "=\x00") {
			return fmt.Errorf("rollout.custom.environment key %q is not a variable name", key)
		}

		if strings.HasPrefix(key, "LXD_DEPLOYD_") {
			return fmt.Errorf("rollout.custom.environment key %q is reserved: the daemon sets LXD_DEPLOYD_* itself", key)
		}
	}

	d, err := RolloutDuration("custom.timeout", c.Timeout, DefaultDeployerTimeout)
	if err != nil {
		return err
	}

	if d < time.Second {
		return fmt.Errorf("rollout.custom.timeout %q is too short: give at least 1s", c.Timeout)
	}

	if r.MaxSurge != "" || r.MaxUnavailable != "" || r.MinReady != "" {
		return fmt.Errorf("rollout.max_surge, max_unavailable and min_ready are for the built-in strategies: the deployer decides how instances are replaced, so drop them")
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
