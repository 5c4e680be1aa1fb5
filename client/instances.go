package client

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The governor API: what a governor holding a deployment key does.

func instancesPath(deployment string, shape string, segments ...string) string {
	return path(append([]string{"deployments", deployment, "shapes", shape, "instances"}, segments...)...)
}

// GetDeploymentShapeInstanceNames returns the names of a shape's instances.
func (s *Server) GetDeploymentShapeInstanceNames(deployment string, shape string) ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(instancesPath(deployment, shape)), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetDeploymentShapeInstances returns a shape's instances with their LXD status.
func (s *Server) GetDeploymentShapeInstances(deployment string, shape string) ([]api.DeploymentInstance, error) {
	var instances []api.DeploymentInstance
	_, err := s.queryStruct(http.MethodGet, s.withProject(instancesPath(deployment, shape)+"?recursion=1"), nil, "", &instances)
	return instances, err
}

// GetDeploymentShapeInstance returns one instance with LXD's live state.
func (s *Server) GetDeploymentShapeInstance(deployment string, shape string, name string) (*api.DeploymentInstance, error) {
	var instance api.DeploymentInstance
	_, err := s.queryStruct(http.MethodGet, s.withProject(instancesPath(deployment, shape, name)), nil, "", &instance)
	if err != nil {
		return nil, err
	}

	return &instance, nil
}

// CreateDeploymentShapeInstance launches an instance of a shape. The bound check happens at
// once (a shape at its maximum answers 409); the LXD work is the returned operation.
func (s *Server) CreateDeploymentShapeInstance(deployment string, shape string, name string) (*Operation, error) {
	return s.operation(http.MethodPost, s.withProject(instancesPath(deployment, shape, name)), nil)
}

// DeleteDeploymentShapeInstance deletes an instance of a shape (409 at the minimum).
func (s *Server) DeleteDeploymentShapeInstance(deployment string, shape string, name string) (*Operation, error) {
	return s.operation(http.MethodDelete, s.withProject(instancesPath(deployment, shape, name)), nil)
}

// UpdateDeploymentShapeInstanceState starts, stops, restarts, freezes or unfreezes an instance.
func (s *Server) UpdateDeploymentShapeInstanceState(deployment string, shape string, name string, state lxdapi.InstanceStatePut) (*Operation, error) {
	return s.operation(http.MethodPut, s.withProject(instancesPath(deployment, shape, name, "state")), state)
}
