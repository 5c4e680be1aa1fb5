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
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// The web view's session cookie and the headers its requests carry (doc/ui.md). The
// cookie is HttpOnly, so a script cannot read it. But browsers send a host's cookies to
// every port of it, so a page served on another port of the same host (a service behind
// an LXD proxy device) gets the cookie too: the cookie alone is no session. The session's
// binding, a second secret handed to the page at sign-in only and kept in the page's
// origin storage (scheme, host and port), must come with every request, in
// BindingHeader, or for the events websocket (where a page cannot set headers) as a
// subprotocol named BindingProtocolPrefix + binding. The CSRF token is derived from both.
const (
	SessionCookie         = "lxd_deployd_session"
	CSRFHeader            = "X-Lxd-Deployd-Csrf"
	BindingHeader         = "X-Lxd-Deployd-Session"
	BindingProtocolPrefix = "lxd-deployd.session."
)

// SessionKey is what identifies a session: its cookie and its binding together. The
// database keeps the hash of this alone, so neither half finds the session without the
// other.
func SessionKey(cookie string, binding string) string {
	if cookie == "" || binding == "" {
		return ""
	}

	return cookie + "." + binding
}

// SessionBindingFromRequest returns the session binding the request carries: the header,
// or a websocket upgrade's subprotocol; "" when there is none.
func SessionBindingFromRequest(r *http.Request) string {
	binding := r.Header.Get(BindingHeader)
	if binding != "" {
		return binding
	}

	for _, value := range r.Header.Values("Sec-Websocket-Protocol") {
		for _, protocol := range strings.Split(value, ",") {
			binding, ok := strings.CutPrefix(strings.TrimSpace(protocol), BindingProtocolPrefix)
			if ok {
				return binding
			}
		}
	}

	return ""
}

// SessionKeyFromRequest is the request's session key, "" unless it carries both the
// cookie and the binding.
func SessionKeyFromRequest(r *http.Request) string {
	return SessionKey(SessionSecretFromRequest(r), SessionBindingFromRequest(r))
}

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
// session (its key, SessionKey), so it needs no storage and dies with it.
func CSRFToken(sessionKey string) string {
	mac := hmac.New(sha256.New, []byte(sessionKey))
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
func CheckSessionRequest(r *http.Request, sessionKey string, readOnly bool) error {
	if safeMethod(r.Method) {
		return nil
	}

	if readOnly {
		return lxdapi.StatusErrorf(http.StatusForbidden, "this web session is read-only: ask an admin for a link without --read-only to make changes")
	}

	want := CSRFToken(sessionKey)
	got := r.Header.Get(CSRFHeader)
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return lxdapi.StatusErrorf(http.StatusForbidden, "missing or wrong %s header: reload the web view and retry", CSRFHeader)
	}

	return CheckBrowserOrigin(r)
}

// SessionCaller is the caller a session acts as: the trust store entry it is bound to,
// marked as the session (id) it comes through, read-only or not.
func SessionCaller(cert TrustedCertificate, id int64, readOnly bool) *Caller {
	return &Caller{
		Protocol:        ProtocolTLS,
		Trusted:         true,
		Fingerprint:     cert.Fingerprint,
		CertificateType: cert.Type,
		Name:            cert.Name,
		Session:         id,
		ReadOnly:        readOnly,
	}
}
