package client

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A custom rollout's deployer (doc/rollouts.md#custom) is handed its rollout and a
// credential in a file; LoadDeployer reads it and connects through the governor socket,
// so that a deployer is a few lines of governor code.

// LoadDeployer reads a deployer's input (path; "" means $LXD_DEPLOYD_DEPLOYER_FILE, else
// /run/lxd-deployd/deployer.json) and returns it with a connection that presents the
// credential on every request. The credential is good for the governor API on the
// rollout's shape only, and only while the rollout runs.
func LoadDeployer(path string) (*api.DeployerInput, *Server, error) {
	if path == "" {
		path = os.Getenv(api.DeployerFileEnv)
	}

	if path == "" {
		path = api.DeployerFile
	}

	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read the deployer's input: %w (a deployer runs in the instance a custom rollout launches)", err)
	}

	var input api.DeployerInput
	err = json.Unmarshal(data, &input)
	if err != nil {
		return nil, nil, fmt.Errorf("decode the deployer's input %s: %w", path, err)
	}

	socket := input.Socket
	if socket == "" {
		socket = GovernorSocket
	}

	credential := input.Credential
	c, err := ConnectUnix(socket, &ConnectionArgs{Project: input.Project, TokenSource: func() (string, error) { return credential, nil }})
	if err != nil {
		return nil, nil, err
	}

	return &input, c, nil
}
