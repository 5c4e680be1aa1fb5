package api

import "time"

// Bounds of a governor hold's ttl, in seconds.
const (
	// DeploymentGovernorTTLDefault is the ttl of a hold when the request gives none.
	DeploymentGovernorTTLDefault = 60

	// DeploymentGovernorTTLMinimum and DeploymentGovernorTTLMaximum bound the ttl.
	DeploymentGovernorTTLMinimum = 5
	DeploymentGovernorTTLMaximum = 3600
)

// DeploymentGovernorPut registers (or renews) the caller as the one active governor of a
// deployment (PUT /1.0/deployments/{deployment}/governor).
type DeploymentGovernorPut struct {
	// The name the governor gives itself, to tell its processes apart (such as its host name)
	// Example: gov-a
	Name string `json:"name" yaml:"name"`

	// Seconds the hold lasts unless renewed by another PUT (default 60, 5 to 3600)
	// Example: 60
	TTL int `json:"ttl" yaml:"ttl"`

	// Take the deployment over from another governor that holds it
	// Example: false
	Takeover bool `json:"takeover" yaml:"takeover"`
}

// DeploymentGovernor is the active governor of a deployment, if any
// (GET /1.0/deployments/{deployment}/governor).
type DeploymentGovernor struct {
	// The governor's name; empty when no governor holds the deployment
	// Example: gov-a
	Name string `json:"name" yaml:"name"`

	// The deployment key it holds the deployment with; empty for an admin
	// Example: gov
	Key string `json:"key" yaml:"key"`

	// Fingerprint of its certificate; empty for the unix socket
	// Example: 57bb0ff4340b5bb28517e062023101adf788c37846dc8b619eb2c3cb4ef29436
	CertificateFingerprint string `json:"certificate_fingerprint" yaml:"certificate_fingerprint"`

	// When it took the deployment (renewals keep it)
	// Example: 2026-11-27T20:00:00Z
	Since time.Time `json:"since" yaml:"since"`

	// When it last renewed its hold
	// Example: 2026-11-27T20:05:00Z
	RenewedAt time.Time `json:"renewed_at" yaml:"renewed_at"`

	// When the hold ends unless renewed
	// Example: 2026-11-27T20:06:00Z
	ExpiresAt time.Time `json:"expires_at" yaml:"expires_at"`
}
