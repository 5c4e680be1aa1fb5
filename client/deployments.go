package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentNames returns the names of the project's deployments.
func (s *Server) GetDeploymentNames() ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments")), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetDeployments returns the project's deployments.
func (s *Server) GetDeployments() ([]api.Deployment, error) {
	var deployments []api.Deployment
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments")+"?recursion=1"), nil, "", &deployments)
	return deployments, err
}

// GetDeployment returns a deployment and its ETag.
func (s *Server) GetDeployment(name string) (*api.Deployment, string, error) {
	var deployment api.Deployment
	etag, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", name)), nil, "", &deployment)
	if err != nil {
		return nil, "", err
	}

	return &deployment, etag, nil
}

// CreateDeployment creates a deployment.
func (s *Server) CreateDeployment(req api.DeploymentsPost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments")), req, "", nil)
	return err
}

// UpdateDeployment replaces a deployment's writable fields; a non-empty etag makes the
// update fail with 412 if the deployment changed since it was read.
func (s *Server) UpdateDeployment(name string, put api.DeploymentPut, etag string) error {
	_, err := s.queryStruct(http.MethodPut, s.withProject(path("deployments", name)), put, etag, nil)
	return err
}

// RenameDeployment renames a deployment.
func (s *Server) RenameDeployment(name string, req api.DeploymentPost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", name)), req, "", nil)
	return err
}

// DeleteDeployment deletes a deployment; force also deletes its instances.
func (s *Server) DeleteDeployment(name string, force bool) error {
	p := path("deployments", name)
	if force {
		p += "?force=1"
	}

	_, err := s.queryStruct(http.MethodDelete, s.withProject(p), nil, "", nil)
	return err
}
