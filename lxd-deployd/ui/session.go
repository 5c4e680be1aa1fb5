package ui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Bounds of links and sessions (doc/ui.md).
const (
	DefaultLinkExpiry = 10 * time.Minute
	MaxLinkExpiry     = 24 * time.Hour
	// SessionLifetime bounds a session however active it is: a stolen laptop's browser
	// stops working by the next day.
	SessionLifetime = 12 * time.Hour
)

// API serves what signing in needs; everything else the web view reads from the REST API.
type API struct {
	DB *db.Cluster

	// Addresses lists where the HTTPS API listens, for links made over the unix socket.
	Addresses func() []string

	// Now is the clock (tests move it).
	Now func() time.Time
}

func (a API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}

	return time.Now()
}

// CreateLink answers POST /1.0/ui/links: a single-use sign-in link acting as a trust store
// entry. Admins may name any entry; other certificates only get links for themselves. Over
// the unix socket without a certificate named, the link acts as the daemon's own entry
// for local admins (LocalIdentityName). A browser session cannot make links, so it cannot
// outlive its own lifetime. Links are capped per entry (checkLinkTarget).
func (a API) CreateLink(r *http.Request) response.Response {
	caller := auth.CallerFromContext(r.Context())
	if caller.Session != 0 || r.TLS != nil && len(r.TLS.PeerCertificates) == 0 {
		return response.Forbidden(errors.New("a web session cannot make sign-in links: use lxd-deploy ui link with a client certificate or on the daemon's host"))
	}

	req := api.UILinksPost{}
	err := decodeBody(r, &req)
	if err != nil {
		return response.BadRequest(err)
	}

	expiry := DefaultLinkExpiry
	if req.Expiry != "" {
		expiry, err = time.ParseDuration(req.Expiry)
		if err != nil || expiry <= 0 || expiry > MaxLinkExpiry {
			return response.BadRequest(fmt.Errorf("expiry %q: give a duration between 1s and %s, such as 10m", req.Expiry, MaxLinkExpiry))
		}
	}

	fingerprint := strings.ToLower(req.Certificate)
	local := fingerprint == "" && caller.Protocol == auth.ProtocolUnix
	switch {
	case local:
	case fingerprint == "":
		fingerprint = caller.Fingerprint
	case fingerprint != caller.Fingerprint && !caller.IsAdmin():
		return response.Forbidden(errors.New("only admins may make sign-in links for another certificate: leave --certificate out"))
	}

	host, err := a.linkHost(r)
	if err != nil {
		return response.SmartError(err)
	}

	secret, hash, err := auth.NewSessionSecret()
	if err != nil {
		return response.InternalError(err)
	}

	now := a.now()
	expires := now.Add(expiry)
	err = a.DB.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if local {
			fingerprint, err = localIdentity(ctx, tx, now)
			if err != nil {
				return err
			}
		}

		cert, err := certificateByFingerprint(ctx, tx, fingerprint)
		if errors.Is(err, sql.ErrNoRows) {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "no certificate %q in the trust store: sign-in links act as a trusted certificate (lxd-deploy config trust list)", fingerprint)
		}

		if err != nil {
			return err
		}

		err = checkLinkTarget(ctx, tx, *cert, now)
		if err != nil {
			return err
		}

		return db.CreateUILink(ctx, tx, fingerprint, hash, req.ReadOnly, now, expires)
	})
	if err != nil {
		return response.SmartError(err)
	}

	// The secret travels in the fragment, which browsers never send to a server: it stays
	// out of access logs and Referer headers. The page hands it over in a POST.
	return response.SyncResponse(api.UILink{
		URL:         "https://" + host + "/ui/#login=" + secret,
		Certificate: fingerprint,
		ReadOnly:    req.ReadOnly,
		ExpiresAt:   expires.UTC(),
	})
}

// linkHost is the host:port a link points at: the one the caller reached over HTTPS, or
// the daemon's first HTTPS address when asked over the unix socket.
func (a API) linkHost(r *http.Request) (string, error) {
	if r.TLS != nil && r.Host != "" {
		return r.Host, nil
	}

	if a.Addresses != nil {
		for _, address := range a.Addresses() {
			host, _, err := net.SplitHostPort(address)
			if err == nil && !net.ParseIP(host).IsLoopback() {
				return address, nil
			}
		}

		addresses := a.Addresses()
		if len(addresses) > 0 {
			return addresses[0], nil
		}
	}

	return "", lxdapi.StatusErrorf(http.StatusConflict, "the daemon serves no HTTPS: start it with --https-address to use the web view")
}

// loginPost is the body of POST /ui/login.
type loginPost struct {
	Token string `json:"token"`
}

// Login answers POST /ui/login: it redeems a link's secret, once, for a session: the
// cookie, and the binding that must come with it (auth.SessionKey), which only this answer
// holds.
func (a API) Login(r *http.Request) response.Response {
	if r.TLS == nil {
		return response.BadRequest(errors.New("sign in over HTTPS: session cookies are only sent there"))
	}

	req := loginPost{}
	err := decodeBody(r, &req)
	if err != nil {
		return response.BadRequest(err)
	}

	secret, _, err := auth.NewSessionSecret()
	if err != nil {
		return response.InternalError(err)
	}

	binding, _, err := auth.NewSessionSecret()
	if err != nil {
		return response.InternalError(err)
	}

	key := auth.SessionKey(secret, binding)
	now := a.now()
	var session *db.UISession
	var cert auth.TrustedCertificate
	err = a.DB.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		session, err = db.RedeemUILink(ctx, tx, auth.HashSessionSecret(req.Token), auth.HashSessionSecret(key), now, now.Add(SessionLifetime))
		if err != nil {
			return err
		}

		cert, err = trusted(ctx, tx, session.Fingerprint, now)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return response.Forbidden(errors.New("this sign-in link is unknown, used or expired: links work once; ask for a new one (lxd-deploy ui link)"))
	}

	if err != nil {
		return response.SmartError(err)
	}

	cookie := &http.Cookie{
		Name:     auth.SessionCookie,
		Value:    secret,
		Path:     "/",
		Expires:  session.ExpiresAt,
		MaxAge:   int(session.ExpiresAt.Sub(now).Seconds()),
		HttpOnly: true,
		Secure:   true,
		SameSite: http.SameSiteStrictMode,
	}

	info := sessionInfo(cert, session, key)
	info.Binding = binding
	return withCookie(cookie, response.SyncResponse(info))
}

// Session answers GET /ui/session: who the browser is signed in as, and for a session the
// CSRF token. A session is only found with its binding, which a page of another port
// (that the cookie reaches too) does not have.
func (a API) Session(r *http.Request) response.Response {
	caller := auth.CallerFromContext(r.Context())
	key := auth.SessionKeyFromRequest(r)
	if caller.Session != 0 && key != "" {
		var session *db.UISession
		err := a.DB.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
			var err error
			session, err = db.GetUISession(ctx, tx, auth.HashSessionSecret(key), a.now())
			return err
		})
		if err != nil {
			return response.SmartError(err)
		}

		cert := auth.TrustedCertificate{Fingerprint: caller.Fingerprint, Type: caller.CertificateType, Name: caller.Name}
		return response.SyncResponse(sessionInfo(cert, session, key))
	}

	return response.SyncResponse(api.UISession{Name: caller.Name, Fingerprint: caller.Fingerprint, CertificateType: caller.CertificateType, Method: "certificate"})
}

// Logout answers POST /ui/logout: the session ends in the database, not only in the
// browser. It takes the cookie and the binding, so a page that has the cookie alone cannot
// sign the user out either; the cookie is cleared in any case.
func (a API) Logout(r *http.Request) response.Response {
	key := auth.SessionKeyFromRequest(r)
	if key != "" {
		err := a.DB.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
			return db.DeleteUISession(ctx, tx, auth.HashSessionSecret(key))
		})
		if err != nil {
			return response.SmartError(err)
		}
	}

	cookie := &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
	return withCookie(cookie, response.EmptySyncResponse())
}

func sessionInfo(cert auth.TrustedCertificate, session *db.UISession, key string) api.UISession {
	expires := session.ExpiresAt.UTC()
	info := api.UISession{
		Name:            cert.Name,
		Fingerprint:     cert.Fingerprint,
		CertificateType: cert.Type,
		Method:          "link",
		ReadOnly:        session.ReadOnly,
		ExpiresAt:       &expires,
	}

	// A read-only session changes nothing, so it gets no token to change things with.
	if !session.ReadOnly {
		info.CSRFToken = auth.CSRFToken(key)
	}

	return info
}

// trusted reads the trust store entry with the fingerprint, refusing one whose
// certificate is outside its validity dates (as the TLS path does).
func trusted(ctx context.Context, tx *sql.Tx, fingerprint string, now time.Time) (auth.TrustedCertificate, error) {
	c, err := certificateByFingerprint(ctx, tx, fingerprint)
	if err != nil {
		return auth.TrustedCertificate{}, err
	}

	err = auth.CheckCertificateValidity(c.Name, c.Certificate, now)
	if err != nil {
		return auth.TrustedCertificate{}, err
	}

	return auth.TrustedCertificate{Fingerprint: c.Fingerprint, Type: c.Type, Name: c.Name}, nil
}
