package api

import (
	lxdapi "github.com/canonical/lxd/shared/api"
)

// APIExtensions lists the API extensions this server supports. template_errors: a
// templated config that does not expand answers every problem in the error's metadata
// (DeploymentTemplateError), and plans and applies carry the expansion's warnings.
var APIExtensions = []string{"deployments", "template_errors", "metrics", "events_logging", "clustering", "deployment_shape_revisions", "deployment_shape_rollouts", "deployment_activity", "instance_health", "instance_lifecycle_hooks", "warm_pools"}

// Server is GET /1.0. Its JSON is a superset of LXD's api.Server, so that LXD's own Go
// client (lxd.ConnectLXD) can connect to lxd-deployd.
type Server struct {
	lxdapi.ServerUntrusted `yaml:",inline"`

	// Server configuration (kept for LXD client compatibility)
	// Example: {}
	Config map[string]any `json:"config" yaml:"config"`

	// Details of the server, only for trusted callers
	Environment *ServerEnvironment `json:"environment,omitempty" yaml:"environment,omitempty"`
}

// ServerEnvironment describes the server and its connection to LXD.
type ServerEnvironment struct {
	// Addresses the HTTPS API listens on
	// Example: ["10.0.0.1:8444"]
	Addresses []string `json:"addresses" yaml:"addresses"`

	// PEM certificate of the server
	// Example: X509 PEM certificate
	Certificate string `json:"certificate" yaml:"certificate"`

	// SHA-256 fingerprint of the server certificate
	// Example: 57bb0ff4340b5bb28517e062023101adf788c37846dc8b619eb2c3cb4ef29436
	CertificateFingerprint string `json:"certificate_fingerprint" yaml:"certificate_fingerprint"`

	// Server implementation name
	// Example: lxd-deployd
	Server string `json:"server" yaml:"server"`

	// Name of this server (host name)
	// Example: host1
	ServerName string `json:"server_name" yaml:"server_name"`

	// Version of lxd-deployd
	// Example: 0.1
	ServerVersion string `json:"server_version" yaml:"server_version"`

	// Process id of the daemon
	// Example: 1453969
	ServerPid int `json:"server_pid" yaml:"server_pid"`

	// Whether the database is a cluster of several daemons
	// Example: false
	ServerClustered bool `json:"server_clustered" yaml:"server_clustered"`

	// Handler panics since the daemon started (each is logged at error level with a request id)
	// Example: 0
	HandlerPanics uint64 `json:"handler_panics" yaml:"handler_panics"`

	// dqlite address of this daemon
	// Example: @lxd-deployd-3f2a
	DatabaseAddress string `json:"database_address" yaml:"database_address"`

	// Path of the LXD unix socket the daemon uses
	// Example: /var/lib/lxd/unix.socket
	LXDSocket string `json:"lxd_socket" yaml:"lxd_socket"`

	// "online" or "unavailable"
	// Example: online
	LXDStatus string `json:"lxd_status" yaml:"lxd_status"`

	// Why LXD is unavailable (empty when online)
	// Example: cannot connect to LXD at /var/lib/lxd/unix.socket: no such file or directory
	LXDError string `json:"lxd_error" yaml:"lxd_error"`

	// Version of the connected LXD
	// Example: 5.0.2
	LXDVersion string `json:"lxd_version" yaml:"lxd_version"`

	// Whether the daemon runs its own private LXD because none answered (--private-lxd)
	// Example: false
	LXDPrivate bool `json:"lxd_private" yaml:"lxd_private"`
}

// CertificateToken is the answer to a trust token request.
type CertificateToken struct {
	lxdapi.CertificateAddToken `yaml:",inline"`

	// The token to hand to the new client, in LXD's format (base64 JSON)
	// Example: eyJjbGllbnRfbmFtZSI6...
	Token string `json:"token" yaml:"token"`
}
