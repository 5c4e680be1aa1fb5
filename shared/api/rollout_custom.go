package api

import "time"

// DeploymentShapeRolloutCustom configures the custom strategy: a transient deployer
// instance, launched from an image the admin names, carries out the rollout through the
// governor API with a credential scoped to the shape (seed 002, "Deployer Image").
type DeploymentShapeRolloutCustom struct {
	// Image of the deployer (an alias or fingerprint in the deployment's project)
	// Example: deployer
	Image string `json:"image" yaml:"image"`

	// Command run in the deployer instance; its exit code decides the rollout (default
	// ["/usr/local/bin/deployer"])
	// Example: ["/usr/local/bin/deployer", "-strategy", "blue-green"]
	Command []string `json:"command,omitempty" yaml:"command,omitempty"`

	// Environment given to the command, besides the LXD_DEPLOYD_* variables
	// Example: {"LOG_LEVEL": "debug"}
	Environment map[string]string `json:"environment,omitempty" yaml:"environment,omitempty"`

	// How long the deployer may run in all (default 10m); the rollout's progress_deadline
	// applies too
	// Example: 10m
	Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

// DeploymentShapeRolloutHook is a pre or post hook of a rolling, recreate or canary
// rollout: a transient instance, as a custom rollout's deployer, whose exit code gates the
// step (a database migration before new code starts, say).
type DeploymentShapeRolloutHook struct {
	// Image of the hook (an alias or fingerprint in the deployment's project)
	// Example: migrations
	Image string `json:"image" yaml:"image"`

	// Command run in the hook instance (required)
	// Example: ["/usr/local/bin/migrate", "up"]
	Command []string `json:"command" yaml:"command"`

	// Environment given to the command, besides the LXD_DEPLOYD_* variables
	// Example: {"DB_HOST": "10.0.0.5"}
	Environment map[string]string `json:"environment,omitempty" yaml:"environment,omitempty"`

	// How long the hook may run (default 10m)
	// Example: 5m
	Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

// DeploymentRolloutDeployer is a transient instance of a rollout: the deployer that carries
// out a custom rollout, or a pre or post hook.
type DeploymentRolloutDeployer struct {
	// Name of the deployer instance in LXD
	// Example: web-d3-9f2c1a
	Instance string `json:"instance" yaml:"instance"`

	// Its command's exit code, once it ended (-1: it could not run, was killed, or its end
	// was lost)
	// Example: 0
	ExitCode *int `json:"exit_code,omitempty" yaml:"exit_code,omitempty"`

	// Its stdout then stderr (the last 64 KiB; admins only)
	// Example: launched web-g3-0 web-g3-1; deleted web-1 web-2
	Output string `json:"output,omitempty" yaml:"output,omitempty"`

	// When it started and ended
	StartedAt  time.Time  `json:"started_at" yaml:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty" yaml:"finished_at,omitempty"`

	// Whether the deployer instance is gone from LXD
	// Example: true
	Deleted bool `json:"deleted" yaml:"deleted"`
}

// Environment variables and files a deployer is given (client.LoadDeployer reads them).
const (
	// DeployerFileEnv names the file (JSON, DeployerInput) holding the deployer's inputs
	// and credential, mode 0400, pushed into the instance before the command starts.
	DeployerFileEnv = "LXD_DEPLOYD_DEPLOYER_FILE"

	// DeployerFile is where that file is.
	DeployerFile = "/run/lxd-deployd/deployer.json"
)

// DeployerInput is what a deployer is handed: the rollout to carry out and a credential
// good for the governor API on that shape only, while the rollout runs.
type DeployerInput struct {
	// Example: default
	Project string `json:"project"`
	// Example: dep1
	Deployment string `json:"deployment"`
	// Example: web
	Shape string `json:"shape"`
	// The rollout's number
	// Example: 3
	Rollout int `json:"rollout"`
	// The revision to roll out, and the one the rollout started from
	// Example: 4
	Revision int `json:"revision"`
	// Example: 3
	FromRevision int `json:"from_revision"`
	// The socket to reach the daemon through
	// Example: /dev/lxd-deployd.sock
	Socket string `json:"socket"`
	// The bearer credential (Authorization: Bearer ...)
	Credential string `json:"credential"`

	// pre or post for a hook, empty for a custom rollout's deployer
	// Example: pre
	Hook string `json:"hook,omitempty"`
}
