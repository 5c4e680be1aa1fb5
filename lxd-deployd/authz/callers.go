package authz

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

var (
	// ErrMetricsOnly is what a metrics certificate gets anywhere but /1.0/metrics.
	ErrMetricsOnly = forbidden("a metrics certificate may only read /1.0/metrics: use a client certificate for the management API")

	// ErrMemberOnly refuses another member's own certificate outside the internal member
	// routes: what a member forwards carries the original caller, who is checked instead.
	ErrMemberOnly = forbidden("a cluster member's certificate may use the internal member routes only (event relay, forwarded requests)")
)

// Admin lets through the unix socket and trusted client certificates.
func Admin(caller *auth.Caller) error {
	if caller.IsAdmin() {
		return nil
	}

	if !caller.Trusted {
		return forbidden("not trusted: add this client's certificate to the trust store (lxd-deploy config trust add)")
	}

	if caller.CertificateType == api.CertificateTypeMetrics {
		return ErrMetricsOnly
	}

	if caller.CertificateType == auth.CertificateTypeMember {
		return ErrMemberOnly
	}

	return forbidden("a %s certificate may only act through deployment keys: the management API needs a client certificate", caller.CertificateType)
}

// Trusted lets any trusted caller through but metrics certificates and members' own; the
// handler scopes what it shows.
func Trusted(caller *auth.Caller) error {
	if !caller.Trusted {
		return forbidden("not trusted: add this client's certificate to the trust store")
	}

	if caller.CertificateType == api.CertificateTypeMetrics {
		return ErrMetricsOnly
	}

	if caller.CertificateType == auth.CertificateTypeMember {
		return ErrMemberOnly
	}

	return nil
}
