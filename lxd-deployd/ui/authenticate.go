package ui

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// Authenticate turns a request carrying a session (and no trusted certificate) into the
// caller its session acts as. A session is its cookie and its binding together
// (auth.SessionKey): the cookie alone, which browsers also send to pages on other ports of
// the host, is an untrusted caller, as is an unknown or ended session, so the web view's
// own files still load and it can offer to sign in again. A session whose certificate is
// past its validity dates, a write from a read-only session, or one without the session's
// CSRF token is refused here, before any route runs.
func Authenticate(r *http.Request, cluster *db.Cluster, now time.Time) (*auth.Caller, error) {
	untrusted := &auth.Caller{Protocol: auth.ProtocolTLS}
	key := auth.SessionKeyFromRequest(r)
	if key == "" {
		return untrusted, nil
	}

	// Signing in and out act on the cookie itself, not as its session: a read-only session
	// must be able to sign out, and a browser with a session to open a new link. Both are
	// public routes; the origin check still applies to them.
	if r.URL.Path == "/ui/login" || r.URL.Path == "/ui/logout" {
		return untrusted, nil
	}

	var session *db.UISession
	var cert auth.TrustedCertificate
	err := cluster.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		session, err = db.GetUISession(ctx, tx, auth.HashSessionSecret(key), now)
		if err != nil {
			return err
		}

		cert, err = trusted(ctx, tx, session.Fingerprint, now)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return untrusted, nil
	}

	if err != nil {
		return nil, err
	}

	err = auth.CheckSessionRequest(r, key, session.ReadOnly)
	if err != nil {
		return nil, err
	}

	return auth.SessionCaller(cert, session.ID, session.ReadOnly), nil
}
