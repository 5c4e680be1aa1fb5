package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentKeyNames returns the names of a deployment's keys.
func (s *Server) GetDeploymentKeyNames(deployment string) ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "keys")), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetDeploymentKeys returns a deployment's keys.
func (s *Server) GetDeploymentKeys(deployment string) ([]api.DeploymentKey, error) {
	var keys []api.DeploymentKey
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "keys")+"?recursion=1"), nil, "", &keys)
	return keys, err
}

// GetDeploymentKey returns a deployment key and its ETag.
func (s *Server) GetDeploymentKey(deployment string, name string) (*api.DeploymentKey, string, error) {
	var key api.DeploymentKey
	etag, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "keys", name)), nil, "", &key)
	if err != nil {
		return nil, "", err
	}

	return &key, etag, nil
}

// CreateDeploymentKey binds a trusted deployments certificate to a deployment.
func (s *Server) CreateDeploymentKey(deployment string, req api.DeploymentKeysPost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", deployment, "keys")), req, "", nil)
	return err
}

// UpdateDeploymentKey replaces a key's description and role.
func (s *Server) UpdateDeploymentKey(deployment string, name string, put api.DeploymentKeyPut, etag string) error {
	_, err := s.queryStruct(http.MethodPut, s.withProject(path("deployments", deployment, "keys", name)), put, etag, nil)
	return err
}

// RenameDeploymentKey renames a deployment key.
func (s *Server) RenameDeploymentKey(deployment string, name string, req api.DeploymentKeyPost) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments", deployment, "keys", name)), req, "", nil)
	return err
}

// DeleteDeploymentKey deletes a deployment key, revoking its access.
func (s *Server) DeleteDeploymentKey(deployment string, name string) error {
	_, err := s.queryStruct(http.MethodDelete, s.withProject(path("deployments", deployment, "keys", name)), nil, "", nil)
	return err
}
