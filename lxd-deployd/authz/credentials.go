package authz

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// Credential routes (the trust store and its tokens, deployment keys, the webhook secret,
// cluster join tokens and the cluster certificate) are for admins, and not for every
// admin's web session (doc/ui.md): what a session made there (a certificate, a trust or
// join token, a key) would outlive the session's 12 hours, and a read-only session must
// hold nothing that changes things. Manifests are read as credentials are: they keep the
// templates' input as written, secrets unmasked, which only admins may see.

// RefuseSessionCredentials is the one home of the rule: a web session may not change
// credentials (write), and a read-only one may not see them, nor unmasked secrets, either.
func RefuseSessionCredentials(caller *auth.Caller, write bool) error {
	if caller.Session == 0 {
		return nil
	}

	if caller.ReadOnly {
		return rest.Forbidden("a read-only web session has no access to credentials or unmasked secrets: use lxd-deploy with a client certificate or on the daemon's host")
	}

	if write {
		return rest.Forbidden("a web session cannot change credentials, which would outlive it: use lxd-deploy with a client certificate or on the daemon's host")
	}

	return nil
}

// Member lets through only another member itself: a caller presenting a current member's
// own certificate over TLS (clustered says this daemon has members), not a request it
// forwards for someone; path names the refused route.
func Member(caller *auth.Caller, clustered bool, path string) error {
	if !clustered || !caller.Trusted || caller.Protocol != auth.ProtocolTLS || caller.CertificateType != auth.CertificateTypeMember || caller.Via != "" {
		return forbidden("only cluster members may use %s", path)
	}

	return nil
}
