package api

import "time"

// UILinksPost asks for a single-use link that signs a browser in to the web view
// (doc/ui.md) as a trust store entry.
type UILinksPost struct {
	// Certificate is the fingerprint of the trust store entry the session acts as; empty
	// means the calling certificate (required over the unix socket, which has none).
	// Example: 2f0e...
	Certificate string `json:"certificate" yaml:"certificate"`

	// ReadOnly makes a session that only reads: no buttons, every write refused.
	// Example: true
	ReadOnly bool `json:"read_only" yaml:"read_only"`

	// Expiry is how long the link can be used, a Go duration up to 24h (default 10m).
	// Example: 10m
	Expiry string `json:"expiry" yaml:"expiry"`
}

// UILink is a sign-in link; its secret is shown once, here.
type UILink struct {
	// URL opens the web view and signs the browser in, once.
	// Example: https://10.0.0.1:8443/ui/#login=Qm9...
	URL string `json:"url" yaml:"url"`

	// Certificate is the fingerprint the session will act as.
	// Example: 2f0e...
	Certificate string `json:"certificate" yaml:"certificate"`

	// ReadOnly is whether the session only reads.
	// Example: false
	ReadOnly bool `json:"read_only" yaml:"read_only"`

	// ExpiresAt is when the link stops working if unused.
	// Example: 2026-11-24T18:10:00Z
	ExpiresAt time.Time `json:"expires_at" yaml:"expires_at"`
}

// UISession is who the web view is signed in as.
type UISession struct {
	// Name of the trust store entry the browser acts as.
	// Example: alice-laptop
	Name string `json:"name" yaml:"name"`

	// Fingerprint of that entry.
	// Example: 2f0e...
	Fingerprint string `json:"fingerprint" yaml:"fingerprint"`

	// CertificateType of that entry: client (admin) or deployments (through its keys).
	// Example: client
	CertificateType string `json:"certificate_type" yaml:"certificate_type"`

	// Method is how the browser signed in: certificate or link.
	// Example: link
	Method string `json:"method" yaml:"method"`

	// ReadOnly sessions only read.
	// Example: false
	ReadOnly bool `json:"read_only" yaml:"read_only"`

	// CSRFToken goes in the X-Lxd-Deployd-Csrf header of every state-changing request of a
	// link session (empty when signed in with a certificate).
	// Example: 9c1d...
	CSRFToken string `json:"csrf_token" yaml:"csrf_token"`

	// Binding is the session's second secret, answered by POST /ui/login only: the page
	// keeps it in its origin's storage and sends it with every request in the
	// X-Lxd-Deployd-Session header (the events websocket: as subprotocol
	// lxd-deployd.session.<binding>). Without it the cookie is no session.
	// Example: Zm9v...
	Binding string `json:"binding,omitempty" yaml:"binding,omitempty"`

	// ExpiresAt is when a link session ends (absent for a certificate).
	// Example: 2026-11-25T06:00:00Z
	ExpiresAt *time.Time `json:"expires_at,omitempty" yaml:"expires_at,omitempty"`
}
