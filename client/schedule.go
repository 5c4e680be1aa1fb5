package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentShapeSchedule returns a shape's scheduled actions with their next
// occurrences by the daemon's clock, and the last action fired (doc/governors.md).
func (s *Server) GetDeploymentShapeSchedule(deployment string, shape string) (*api.DeploymentShapeSchedule, error) {
	var schedule api.DeploymentShapeSchedule
	_, err := s.queryStruct(http.MethodGet, s.withProject(shapePath(deployment, shape, "schedule")), nil, "", &schedule)
	if err != nil {
		return nil, err
	}

	return &schedule, nil
}
