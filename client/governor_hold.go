package client

import (
	"net/http"
	"net/url"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentGovernor returns the deployment's active governor (Name empty: none).
func (s *Server) GetDeploymentGovernor(deployment string) (*api.DeploymentGovernor, error) {
	var governor api.DeploymentGovernor
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "governor")), nil, "", &governor)
	if err != nil {
		return nil, err
	}

	return &governor, nil
}

// HoldDeploymentGovernor registers the caller as the deployment's active governor, or
// renews its hold; a 409 names the governor that holds it already.
func (s *Server) HoldDeploymentGovernor(deployment string, put api.DeploymentGovernorPut) (*api.DeploymentGovernor, error) {
	var governor api.DeploymentGovernor
	_, err := s.queryStruct(http.MethodPut, s.withProject(path("deployments", deployment, "governor")), put, "", &governor)
	if err != nil {
		return nil, err
	}

	return &governor, nil
}

// ReleaseDeploymentGovernor ends the hold of the governor called name (an admin: anyone's,
// with name empty).
func (s *Server) ReleaseDeploymentGovernor(deployment string, name string) error {
	p := path("deployments", deployment, "governor")
	if name != "" {
		p += "?name=" + url.QueryEscape(name)
	}

	_, err := s.queryStruct(http.MethodDelete, s.withProject(p), nil, "", nil)
	return err
}
