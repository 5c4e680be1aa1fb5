package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// Credential routes (the trust store and its tokens, deployment keys, the webhook secret,
// cluster join tokens and the cluster certificate) are for admins, and not for every
// admin's web session (doc/ui.md): what a session made there (a certificate, a trust or
// join token, a key) would outlive the session's 12 hours, and a read-only session must
// hold nothing that changes things. Manifests are read as credentials are: they keep the
// templates' input as written, secrets unmasked, which only admins may see.

// allowSecretRead lets admins read credentials and unmasked manifests, but not read-only
// web sessions.
func allowSecretRead(r *http.Request) error {
	err := allowAdmin(r)
	if err != nil {
		return err
	}

	return refuseSessionCredentials(auth.CallerFromContext(r.Context()), false)
}

// allowCredentialWrite lets admins change credentials, but no web session.
func allowCredentialWrite(r *http.Request) error {
	err := allowAdmin(r)
	if err != nil {
		return err
	}

	return refuseSessionCredentials(auth.CallerFromContext(r.Context()), true)
}

// refuseSessionCredentials is the one home of the rule: a web session may not change
// credentials (write), and a read-only one may not see them, nor unmasked secrets, either.
func refuseSessionCredentials(caller *auth.Caller, write bool) error {
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
