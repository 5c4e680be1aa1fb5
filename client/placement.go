package client

import "net/http"

// Placement across an LXD cluster (doc/placement.md).

// DrainLXDMember starts moving every managed instance off an LXD cluster member.
func (s *Server) DrainLXDMember(member string) (*Operation, error) {
	return s.operation(http.MethodPost, path("lxd-members", member, "drain"), nil)
}

// RebalanceDeploymentShape starts restoring a shape's spread over its placement's domains.
func (s *Server) RebalanceDeploymentShape(deployment string, shape string) (*Operation, error) {
	return s.operation(http.MethodPost, s.withProject(shapePath(deployment, shape, "rebalance")), nil)
}
