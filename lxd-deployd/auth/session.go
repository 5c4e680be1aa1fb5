package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// The web view's session cookie and the header its state-changing requests carry
// (doc/ui.md). The cookie is HttpOnly, so a script cannot read it; the CSRF token is
// derived from it and handed to the page, which a page of another site cannot read.
const (
	SessionCookie = "lxd_deployd_session"
	CSRFHeader    = "X-Lxd-Deployd-Csrf"
)

// NewSessionSecret returns a random secret for a link or a session, and the hash that is
// all the database keeps of it.
func NewSessionSecret() (secret string, hash string, err error) {
	b := make([]byte, 32)
	_, err = rand.Read(b)
	if err != nil {
		return "", "", err
	}

	secret = base64.RawURLEncoding.EncodeToString(b)
	return secret, HashSessionSecret(secret), nil
}

// HashSessionSecret is how links and sessions are looked up.
func HashSessionSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CSRFToken is the token a session's state-changing requests must carry: bound to the
// session, so it needs no storage and dies with it.
func CSRFToken(sessionSecret string) string {
	mac := hmac.New(sha256.New, []byte(sessionSecret))
	mac.Write([]byte("lxd-deployd ui csrf"))
	return hex.EncodeToString(mac.Sum(nil))
}

// safeMethod reports whether a method only reads.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// CheckBrowserOrigin refuses a state-changing request a browser sent from a page of another
// site: a browser attaches its client certificate (and would attach cookies) whoever the
// page is. Browsers say where a request comes from (Origin, Sec-Fetch-Site); clients that
// are not browsers send neither and pass.
func CheckBrowserOrigin(r *http.Request) error {
	if safeMethod(r.Method) {
		return nil
	}

	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return lxdapi.StatusErrorf(http.StatusForbidden, "cross-site request refused: use the web view served by this daemon or a non-browser client")
	}

	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}

	u, err := url.Parse(origin)
	if err != nil || u.Host != r.Host {
		return lxdapi.StatusErrorf(http.StatusForbidden, "request from origin %q refused: only pages of this daemon (%s) may change things from a browser", origin, r.Host)
	}

	return nil
}

// SessionSecretFromRequest returns the session cookie's value, or "" when there is none.
func SessionSecretFromRequest(r *http.Request) string {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return ""
	}

	return c.Value
}

// CheckSessionRequest applies what a session allows before anything runs: a read-only
// session never changes anything, and every state-changing request carries the session's
// CSRF token (besides the origin check every browser request gets).
func CheckSessionRequest(r *http.Request, sessionSecret string, readOnly bool) error {
	if safeMethod(r.Method) {
		return nil
	}

	if readOnly {
		return lxdapi.StatusErrorf(http.StatusForbidden, "this web session is read-only: ask an admin for a link without --read-only to make changes")
	}

	want := CSRFToken(sessionSecret)
	got := r.Header.Get(CSRFHeader)
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return lxdapi.StatusErrorf(http.StatusForbidden, "missing or wrong %s header: reload the web view and retry", CSRFHeader)
	}

	return CheckBrowserOrigin(r)
}

// SessionCaller is the caller a session acts as: the trust store entry it is bound to.
func SessionCaller(cert TrustedCertificate) *Caller {
	return &Caller{
		Protocol:        ProtocolTLS,
		Trusted:         true,
		Fingerprint:     cert.Fingerprint,
		CertificateType: cert.Type,
		Name:            cert.Name,
	}
}
