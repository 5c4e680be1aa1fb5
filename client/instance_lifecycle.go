package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// DeploymentShapeInstanceLifecycle ends (continue, abandon) or extends (heartbeat) an
// instance's launching:wait or terminating:wait.
func (s *Server) DeploymentShapeInstanceLifecycle(deployment string, shape string, name string, action string) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(instancesPath(deployment, shape, name, "lifecycle")), api.DeploymentInstanceLifecyclePost{Action: action}, "", nil)
	return err
}

// GetDeploymentShapeWarmPool returns the instances of a shape's warm pool.
func (s *Server) GetDeploymentShapeWarmPool(deployment string, shape string) ([]api.DeploymentShapeWarmPoolInstance, error) {
	pool := []api.DeploymentShapeWarmPoolInstance{}
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "shapes", shape, "warm-pool")), nil, "", &pool)
	return pool, err
}

// ReportDeploymentShapeInstanceHealth sends an instance's own health report (status passing
// or failing) to a shape with a ttl check: from inside the instance, only for itself.
func (s *Server) ReportDeploymentShapeInstanceHealth(deployment string, shape string, name string, report api.DeploymentInstanceHealthPut) error {
	_, err := s.queryStruct(http.MethodPut, s.withProject(instancesPath(deployment, shape, name, "health")), report, "", nil)
	return err
}
