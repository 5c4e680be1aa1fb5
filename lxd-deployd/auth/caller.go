// Package auth turns a request into a Caller: who is calling and through what. Access checks
// ask the Caller, never the transport.
package auth

import (
	"context"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Protocols a caller can come through.
const (
	// ProtocolUnix is the local unix socket: root-owned, full admin access, like LXD's.
	ProtocolUnix = "unix"

	// ProtocolTLS is HTTPS with a client certificate.
	ProtocolTLS = "tls"

	// ProtocolGovernor is a governor inside an instance (vsock or its proxied unix
	// socket), authenticated by a JWT signed with a deployments key pair.
	ProtocolGovernor = "governor"
)

// CertificateTypeMember is the type of a caller that presented another cluster member's
// own certificate, as recorded with the member (never a trust store entry). It may use the
// internal member routes only; what a member forwards on a person's behalf is authorised
// as that person (Via names the member).
const CertificateTypeMember = "member"

// CertificateTypeDeployer is the type of a caller that presented a custom rollout's
// deployer credential (doc/rollouts.md#custom), never a trust store entry: it may use the
// governor API on one shape (Shape) of one deployment (Audience), while its rollout runs.
const CertificateTypeDeployer = "deployer"

// Caller is the authenticated identity of a request.
type Caller struct {
	// Protocol the request came through.
	Protocol string

	// Trusted is true when the caller is known: the unix socket, or a certificate in the
	// trust store.
	Trusted bool

	// Fingerprint of the caller's trusted certificate (TLS only).
	Fingerprint string

	// CertificateType of the caller's trusted certificate: client, deployments or metrics.
	CertificateType string

	// Name of the caller's trusted certificate, for logs.
	Name string

	// Audience of the caller's token (governor transports only): the one deployment the
	// token is good for, lxd-deployd:<project>/<deployment>.
	Audience string

	// Subject of the caller's token: the governor's instance name, as it claims it.
	Subject string

	// Shape is the one shape a deployer's credential is good for (CertificateTypeDeployer).
	Shape string

	// Instance the request came from, as the transport established it (the per-instance
	// socket, or the vsock peer's context id): never what the caller says.
	Instance string

	// InstanceProject is the LXD project of Instance.
	InstanceProject string

	// Via is the cluster member that forwarded this caller's request, "" when it came
	// directly.
	Via string

	// Session is the id of the web session the caller acts through (doc/ui.md), 0 for
	// any other caller. A session acts as its trust store entry but is not that entry:
	// it may not change credentials, which would outlive it, and it has its own budget of
	// event streams.
	Session int64

	// ReadOnly is true for a read-only web session: a read-only caller everywhere, that
	// is shown no secret values and no credentials, whatever its certificate's role.
	ReadOnly bool
}

// IsAdmin reports whether the caller may use the management API: the unix socket, or a
// trusted certificate of type client.
func (c *Caller) IsAdmin() bool {
	if c == nil || !c.Trusted {
		return false
	}

	return c.Protocol == ProtocolUnix || c.CertificateType == api.CertificateTypeClient
}

// SeesSecrets reports whether the caller is shown secret values (doc/security.md#secrets):
// admins, but not a read-only session of an admin, which must not hold anything that
// changes things (a webhook secret signs scale requests).
func (c *Caller) SeesSecrets() bool {
	return c.IsAdmin() && !c.ReadOnly
}

// StreamKey names the caller for the cap on open event streams: a web session counts
// apart from its certificate, so a browser's streams never use up the certificate's own.
func (c *Caller) StreamKey() string {
	if c != nil && c.Session != 0 {
		return fmt.Sprintf("%s session %d", c.String(), c.Session)
	}

	return c.String()
}

// String names the caller in logs without revealing anything secret.
func (c *Caller) String() string {
	switch {
	case c == nil || !c.Trusted:
		return "untrusted"
	case c.Via != "":
		forwarded := *c
		forwarded.Via = ""
		return forwarded.String() + " via member " + c.Via
	case c.Protocol == ProtocolUnix:
		return "unix"
	case c.Protocol == ProtocolGovernor:
		return "governor:" + c.Name + "@" + c.Instance
	default:
		return c.CertificateType + ":" + c.Name + "(" + c.Fingerprint[:min(12, len(c.Fingerprint))] + ")"
	}
}

type callerKey struct{}

// WithCaller returns a context carrying the caller.
func WithCaller(ctx context.Context, caller *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFromContext returns the request's caller; an untrusted one if none was set.
func CallerFromContext(ctx context.Context) *Caller {
	caller, ok := ctx.Value(callerKey{}).(*Caller)
	if !ok || caller == nil {
		return &Caller{}
	}

	return caller
}
