package client

import (
	"net/http"
	"net/url"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// DryRunRollbackDeploymentShape answers the plan of a rollback (POST .../rollback?dry-run=1):
// the changes, the instances it would leave outdated, whether a rollout would start. It
// changes nothing.
func (s *Server) DryRunRollbackDeploymentShape(deployment string, shape string, req api.DeploymentShapeRollbackPost) (*api.DeploymentShapeRollback, error) {
	var result api.DeploymentShapeRollback
	_, err := s.queryStruct(http.MethodPost, withQuery(s.withProject(shapePath(deployment, shape, "rollback")), url.Values{"dry-run": {"1"}}), req, "", &result)
	if err != nil {
		return nil, err
	}

	return &result, nil
}

// SuspendDeploymentTriggers turns a deployment's kill switch on: no trigger of any of its
// shapes fires until ResumeDeploymentTriggers.
func (s *Server) SuspendDeploymentTriggers(deployment string, req api.DeploymentTriggersPost) error {
	_, _, err := s.Query(http.MethodPost, s.withProject(path("deployments", deployment, "triggers", "suspend")), req, "")
	return err
}

// ResumeDeploymentTriggers turns a deployment's kill switch off and resumes every shape's
// suspended triggers (lifting the image a rollback pinned).
func (s *Server) ResumeDeploymentTriggers(deployment string, req api.DeploymentTriggersPost) error {
	_, _, err := s.Query(http.MethodPost, s.withProject(path("deployments", deployment, "triggers", "resume")), req, "")
	return err
}

// ResumeDeploymentShapeTriggers resumes one shape's triggers that a rollback suspended.
func (s *Server) ResumeDeploymentShapeTriggers(deployment string, shape string, req api.DeploymentTriggersPost) error {
	_, _, err := s.Query(http.MethodPost, s.withProject(shapePath(deployment, shape, "triggers", "resume")), req, "")
	return err
}
