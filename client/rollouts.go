package client

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Shape revisions, rollback, rollouts and the activity log.

func shapePath(deployment string, shape string, segments ...string) string {
	return path(append([]string{"deployments", deployment, "shapes", shape}, segments...)...)
}

// withQuery adds query parameters to a path that may already carry ?project=.
func withQuery(p string, values url.Values) string {
	if len(values) == 0 {
		return p
	}

	u, err := url.Parse(p)
	if err != nil {
		return p
	}

	q := u.Query()
	for k, v := range values {
		q[k] = v
	}

	u.RawQuery = q.Encode()
	return u.String()
}

// GetDeploymentShapeRevisions returns a shape's revisions, newest first.
func (s *Server) GetDeploymentShapeRevisions(deployment string, shape string) ([]api.DeploymentShapeRevision, error) {
	var revisions []api.DeploymentShapeRevision
	_, err := s.queryStruct(http.MethodGet, withQuery(s.withProject(shapePath(deployment, shape, "revisions")), url.Values{"recursion": {"1"}}), nil, "", &revisions)
	return revisions, err
}

// GetDeploymentShapeRevision returns one revision of a shape.
func (s *Server) GetDeploymentShapeRevision(deployment string, shape string, revision int) (*api.DeploymentShapeRevision, error) {
	var rev api.DeploymentShapeRevision
	_, err := s.queryStruct(http.MethodGet, s.withProject(shapePath(deployment, shape, "revisions", strconv.Itoa(revision))), nil, "", &rev)
	if err != nil {
		return nil, err
	}

	return &rev, nil
}

// GetDeploymentShapeRevisionDiff returns the fields that changed from revision from to
// revision to.
func (s *Server) GetDeploymentShapeRevisionDiff(deployment string, shape string, to int, from int) (*api.DeploymentShapeRevisionDiff, error) {
	var diff api.DeploymentShapeRevisionDiff
	p := withQuery(s.withProject(shapePath(deployment, shape, "revisions", strconv.Itoa(to))), url.Values{"diff": {strconv.Itoa(from)}})
	_, err := s.queryStruct(http.MethodGet, p, nil, "", &diff)
	if err != nil {
		return nil, err
	}

	return &diff, nil
}

// RollbackDeploymentShape sets a shape back to an earlier revision (a new revision).
func (s *Server) RollbackDeploymentShape(deployment string, shape string, req api.DeploymentShapeRollbackPost) (*api.DeploymentShapeRollback, error) {
	var result api.DeploymentShapeRollback
	_, err := s.queryStruct(http.MethodPost, s.withProject(shapePath(deployment, shape, "rollback")), req, "", &result)
	if err != nil {
		return nil, err
	}

	return &result, nil
}

// CreateDeploymentShapeRollout starts a rollout of a shape's latest revision; the
// operation follows it (its metadata carries the progress).
func (s *Server) CreateDeploymentShapeRollout(deployment string, shape string, req api.DeploymentRolloutsPost) (*Operation, error) {
	return s.operation(http.MethodPost, s.withProject(shapePath(deployment, shape, "rollouts")), req)
}

// GetDeploymentShapeRollouts returns a shape's rollouts, newest first.
func (s *Server) GetDeploymentShapeRollouts(deployment string, shape string) ([]api.DeploymentRollout, error) {
	var rollouts []api.DeploymentRollout
	_, err := s.queryStruct(http.MethodGet, withQuery(s.withProject(shapePath(deployment, shape, "rollouts")), url.Values{"recursion": {"1"}}), nil, "", &rollouts)
	return rollouts, err
}

// GetDeploymentShapeRollout returns one rollout with its progress.
func (s *Server) GetDeploymentShapeRollout(deployment string, shape string, number int) (*api.DeploymentRollout, error) {
	var rollout api.DeploymentRollout
	_, err := s.queryStruct(http.MethodGet, s.withProject(shapePath(deployment, shape, "rollouts", strconv.Itoa(number))), nil, "", &rollout)
	if err != nil {
		return nil, err
	}

	return &rollout, nil
}

// DeploymentShapeRolloutAction pauses, resumes, cancels, promotes or aborts a rollout.
func (s *Server) DeploymentShapeRolloutAction(deployment string, shape string, number int, action string) error {
	_, err := s.queryStruct(http.MethodPost, s.withProject(shapePath(deployment, shape, "rollouts", strconv.Itoa(number), action)), nil, "", nil)
	return err
}

// GetDeploymentActivity returns a deployment's activity log, oldest first: entries after
// since (0 for all), of one shape when shape is not empty.
func (s *Server) GetDeploymentActivity(deployment string, since int64, shape string) ([]api.DeploymentActivity, error) {
	values := url.Values{}
	if since > 0 {
		values.Set("since", strconv.FormatInt(since, 10))
	}

	if shape != "" {
		values.Set("shape", shape)
	}

	var entries []api.DeploymentActivity
	_, err := s.queryStruct(http.MethodGet, withQuery(s.withProject(path("deployments", deployment, "activity")), values), nil, "", &entries)
	return entries, err
}
