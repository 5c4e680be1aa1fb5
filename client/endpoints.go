package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentShapeEndpoints returns a shape's endpoints: every instance with its
// address, port and state (serving, draining, not-ready; doc/traffic.md).
func (s *Server) GetDeploymentShapeEndpoints(deployment string, shape string) ([]api.DeploymentShapeEndpoint, error) {
	endpoints := []api.DeploymentShapeEndpoint{}
	_, err := s.queryStruct(http.MethodGet, s.withProject(shapePath(deployment, shape, "endpoints")), nil, "", &endpoints)
	if err != nil {
		return nil, err
	}

	return endpoints, nil
}
