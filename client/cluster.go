package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetCluster returns GET /1.0/cluster: this member's name and whether it is clustered.
func (s *Server) GetCluster() (*api.Cluster, error) {
	var cluster api.Cluster
	_, err := s.queryStruct(http.MethodGet, path("cluster"), nil, "", &cluster)
	if err != nil {
		return nil, err
	}

	return &cluster, nil
}

// GetClusterMembers returns every member of the cluster.
func (s *Server) GetClusterMembers() ([]api.ClusterMember, error) {
	var members []api.ClusterMember
	_, err := s.queryStruct(http.MethodGet, path("cluster", "members")+"?recursion=1", nil, "", &members)
	return members, err
}

// GetClusterMember returns one member.
func (s *Server) GetClusterMember(name string) (*api.ClusterMember, error) {
	var member api.ClusterMember
	_, err := s.queryStruct(http.MethodGet, path("cluster", "members", name), nil, "", &member)
	if err != nil {
		return nil, err
	}

	return &member, nil
}

// CreateClusterJoinToken asks for a single-use join token for a new member called name.
func (s *Server) CreateClusterJoinToken(name string) (*api.ClusterJoinToken, error) {
	var token api.ClusterJoinToken
	_, err := s.queryStruct(http.MethodPost, path("cluster", "members"), api.ClusterMembersPost{ServerName: name}, "", &token)
	if err != nil {
		return nil, err
	}

	return &token, nil
}

// DeleteClusterMember removes a member; force removes one that is offline.
func (s *Server) DeleteClusterMember(name string, force bool) error {
	query := ""
	if force {
		query = "?force=1"
	}

	_, err := s.queryStruct(http.MethodDelete, path("cluster", "members", name)+query, nil, "", nil)
	return err
}

// GetClusterJoinTokens returns the members yet to join: the outstanding join tokens
// (status Pending, or Joining once a daemon redeemed one).
func (s *Server) GetClusterJoinTokens() ([]api.ClusterMember, error) {
	var pending []api.ClusterMember
	_, err := s.queryStruct(http.MethodGet, path("cluster", "tokens")+"?recursion=1", nil, "", &pending)
	return pending, err
}

// RevokeClusterJoinToken revokes the outstanding join token of a member yet to join.
func (s *Server) RevokeClusterJoinToken(name string) error {
	_, err := s.queryStruct(http.MethodDelete, path("cluster", "tokens", name), nil, "", nil)
	return err
}

// UpdateClusterCertificate rotates the cluster certificate and waits (up to 20 seconds)
// for every member to move to the new one; the answer says which have not yet.
func (s *Server) UpdateClusterCertificate() (*api.ClusterCertificate, error) {
	var result api.ClusterCertificate
	_, err := s.queryStruct(http.MethodPost, path("cluster", "certificate"), nil, "", &result)
	if err != nil {
		return nil, err
	}

	return &result, nil
}
