package api

import (
	"net/url"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Cluster is GET /1.0/cluster: whether this daemon is part of a cluster, and its name.
type Cluster struct {
	// Name of this member
	// Example: member1
	ServerName string `json:"server_name" yaml:"server_name"`

	// Whether the daemon's database is shared with other members (--cluster-address)
	// Example: true
	Enabled bool `json:"enabled" yaml:"enabled"`
}

// ClusterMembersPost asks for a join token for a new member (POST /1.0/cluster/members).
type ClusterMembersPost struct {
	// Name the new member will have
	// Example: member2
	ServerName string `json:"server_name" yaml:"server_name"`
}

// ClusterMember is a daemon of the cluster.
type ClusterMember struct {
	// Name of the member
	// Example: member1
	ServerName string `json:"server_name" yaml:"server_name"`

	// HTTPS API address of the member (empty when it serves no HTTPS)
	// Example: https://10.0.0.1:8444
	URL string `json:"url" yaml:"url"`

	// Address its dqlite listens on
	// Example: 10.0.0.1:8445
	DatabaseAddress string `json:"database_address" yaml:"database_address"`

	// Role in the database: voter, stand-by, spare, or none when no longer a database node
	// Example: voter
	DatabaseRole string `json:"database_role" yaml:"database_role"`

	// Whether the member is the current database (raft) leader
	// Example: false
	DatabaseLeader bool `json:"database_leader" yaml:"database_leader"`

	// "Online" when its last heartbeat is recent, else "Offline"; for a member yet to join
	// (an outstanding join token), "Pending", or "Joining" once a daemon redeemed it
	// Example: Online
	Status string `json:"status" yaml:"status"`

	// When the join token of a pending member expires (pending members only)
	// Example: 2026-11-23T21:00:00Z
	ExpiresAt *time.Time `json:"expires_at,omitempty" yaml:"expires_at,omitempty"`

	// Last time the member said it was alive
	// Example: 2026-11-23T18:00:00Z
	LastHeartbeat time.Time `json:"last_heartbeat" yaml:"last_heartbeat"`
}

// ClusterJoinPost is what a joining daemon sends to a member (POST /1.0/cluster/join),
// over TLS checked against the join token's fingerprint.
type ClusterJoinPost struct {
	// Name from the join token
	// Example: member2
	ServerName string `json:"server_name" yaml:"server_name"`

	// Secret from the join token
	// Example: 2b2284d44db3...
	Secret string `json:"secret" yaml:"secret"`
}

// ClusterJoinResponse gives a joining daemon what it needs to join: the cluster key pair
// and the database addresses of the members.
type ClusterJoinResponse struct {
	// PEM cluster certificate
	// Example: -----BEGIN CERTIFICATE-----...
	ClusterCertificate string `json:"cluster_certificate" yaml:"cluster_certificate"`

	// PEM cluster private key
	// Example: -----BEGIN EC PRIVATE KEY-----...
	ClusterKey string `json:"cluster_key" yaml:"cluster_key"`

	// dqlite addresses of the current members
	// Example: ["10.0.0.1:8445"]
	DatabaseAddresses []string `json:"database_addresses" yaml:"database_addresses"`
}

// ClusterJoinToken is the answer to POST /1.0/cluster/members.
type ClusterJoinToken struct {
	lxdapi.ClusterMemberJoinToken `yaml:",inline"`

	// The token to pass to the new member's --cluster-join-token, in LXD's format
	// (base64 JSON)
	// Example: eyJzZXJ2ZXJfbmFtZSI6...
	Token string `json:"token" yaml:"token"`
}

// ClusterMemberURL is the API path of a cluster member.
func ClusterMemberURL(name string) string {
	return "/1.0/cluster/members/" + url.PathEscape(name)
}

// ClusterCertificate is the answer of POST /1.0/cluster/certificate, which rotates the
// cluster certificate (dqlite's TLS and what join tokens name).
type ClusterCertificate struct {
	// SHA-256 fingerprint of the new cluster certificate
	// Example: 2b2284d44db3...
	Fingerprint string `json:"fingerprint" yaml:"fingerprint"`

	// Whether every member presents the new certificate and the old one is refused
	// Example: true
	Complete bool `json:"complete" yaml:"complete"`

	// Members that have not moved to the new certificate yet (offline ones hold the
	// rotation until they come back or are removed)
	// Example: ["member3"]
	Waiting []string `json:"waiting" yaml:"waiting"`
}
