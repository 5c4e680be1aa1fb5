package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ResizeDeploymentShape sets new CPU and memory limits for a shape's instances, within its
// resource_bounds (409 outside them), and returns the operation that applies them live.
func (s *Server) ResizeDeploymentShape(deployment string, shape string, req api.DeploymentShapeResourcesPut) (*Operation, error) {
	return s.operation(http.MethodPut, s.withProject(path("deployments", deployment, "shapes", shape, "resources")), req)
}
