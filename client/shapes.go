package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentShapeNames returns the names of a deployment's shapes.
func (s *Server) GetDeploymentShapeNames(deployment string) ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "shapes")), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetDeploymentShapes returns a deployment's shapes.
func (s *Server) GetDeploymentShapes(deployment string) ([]api.DeploymentShape, error) {
	var shapes []api.DeploymentShape
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "shapes")+"?recursion=1"), nil, "", &shapes)
	return shapes, err
}

// GetDeploymentShape returns a shape and its ETag.
func (s *Server) GetDeploymentShape(deployment string, name string) (*api.DeploymentShape, string, error) {
	var shape api.DeploymentShape
	etag, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "shapes", name)), nil, "", &shape)
	if err != nil {
		return nil, "", err
	}

	return &shape, etag, nil
}

// CreateDeploymentShape creates a shape in a deployment.
func (s *Server) CreateDeploymentShape(deployment string, req api.DeploymentShapesPost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", deployment, "shapes")), req, "", nil)
	return err
}

// UpdateDeploymentShape replaces a shape's writable fields.
func (s *Server) UpdateDeploymentShape(deployment string, name string, put api.DeploymentShapePut, etag string) error {
	_, err := s.queryStruct(http.MethodPut, s.withProject(path("deployments", deployment, "shapes", name)), put, etag, nil)
	return err
}

// RenameDeploymentShape renames a shape.
func (s *Server) RenameDeploymentShape(deployment string, name string, req api.DeploymentShapePost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", deployment, "shapes", name)), req, "", nil)
	return err
}

// DeleteDeploymentShape deletes a shape; force also deletes its instances.
func (s *Server) DeleteDeploymentShape(deployment string, name string, force bool) error {
	p := path("deployments", deployment, "shapes", name)
	if force {
		p += "?force=1"
	}

	_, err := s.queryStruct(http.MethodDelete, s.withProject(p), nil, "", nil)
	return err
}
