package ui

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

const (
	adminFP = "aaaa000000000000000000000000000000000000000000000000000000000001"
	govFP   = "bbbb000000000000000000000000000000000000000000000000000000000002"
)

// testAPI is the API on a real dqlite node with two trust store entries, and a clock the
// test moves.
func testAPI(t *testing.T) (*API, *time.Time) {
	t.Helper()
	cluster, _, _ := dbtest.OpenNode(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	// Sessions and links check the entry's certificate is within its dates (both are, by
	// ten years); gov holds a key, as a deployments certificate needs to get a link.
	certPEM := testCertificatePEM(t)
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: adminFP, Type: api.CertificateTypeClient, Name: "alice", Certificate: certPEM})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: govFP, Type: api.CertificateTypeDeployments, Name: "gov", Certificate: certPEM})
		if err != nil {
			return err
		}

		return giveKey(ctx, tx, govFP)
	})
	if err != nil {
		t.Fatal(err)
	}

	a := &API{DB: cluster, Addresses: func() []string { return []string{"127.0.0.1:8443"} }, Now: func() time.Time { return now }}
	return a, &now
}

// request builds a request as the router hands it over: over TLS (with a client
// certificate when withCert), or the unix socket, with the caller in its context.
func request(method string, target string, body any, caller *auth.Caller, withCert bool) *http.Request {
	var buf bytes.Buffer
	if body != nil {
		_ = json.NewEncoder(&buf).Encode(body)
	}

	r := httptest.NewRequest(method, target, &buf)
	if caller == nil || caller.Protocol != auth.ProtocolUnix {
		r.TLS = &tls.ConnectionState{}
		if withCert {
			r.TLS.PeerCertificates = []*x509.Certificate{{}}
		}
	}

	if caller != nil {
		r = r.WithContext(auth.WithCaller(r.Context(), caller))
	}

	return r
}

func render(t *testing.T, resp response.Response) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	err := resp.Render(w)
	if err != nil {
		t.Fatal(err)
	}

	return w
}

func metadata[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var envelope struct {
		Metadata T      `json:"metadata"`
		Error    string `json:"error"`
	}

	err := json.Unmarshal(w.Body.Bytes(), &envelope)
	if err != nil || w.Code != http.StatusOK {
		t.Fatalf("answer %d %s", w.Code, w.Body.String())
	}

	return envelope.Metadata
}

var (
	unixCaller  = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	adminCaller = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: adminFP, CertificateType: api.CertificateTypeClient, Name: "alice"}
	govCaller   = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: govFP, CertificateType: api.CertificateTypeDeployments, Name: "gov"}
)

// secretOf takes the link's secret out of its URL.
func secretOf(t *testing.T, link api.UILink) string {
	t.Helper()
	_, secret, ok := strings.Cut(link.URL, "/ui/#login=")
	if !ok || secret == "" {
		t.Fatalf("link URL %q", link.URL)
	}

	return secret
}

func TestCreateLinkRules(t *testing.T) {
	a, _ := testAPI(t)
	tests := []struct {
		name     string
		caller   *auth.Caller
		withCert bool
		body     api.UILinksPost
		status   int
		message  string
	}{
		{"unix names a certificate", unixCaller, false, api.UILinksPost{Certificate: adminFP}, http.StatusOK, ""},
		{"unix without a certificate", unixCaller, false, api.UILinksPost{}, http.StatusOK, ""},
		{"unknown certificate", unixCaller, false, api.UILinksPost{Certificate: "cc"}, http.StatusBadRequest, "no certificate"},
		{"a certificate for itself", govCaller, true, api.UILinksPost{ReadOnly: true}, http.StatusOK, ""},
		{"a non-admin for another", govCaller, true, api.UILinksPost{Certificate: adminFP}, http.StatusForbidden, "only admins"},
		{"an admin for another", adminCaller, true, api.UILinksPost{Certificate: govFP}, http.StatusOK, ""},
		{"a browser session", adminCaller, false, api.UILinksPost{}, http.StatusForbidden, "web session cannot"},
		{"expiry too long", adminCaller, true, api.UILinksPost{Expiry: "25h"}, http.StatusBadRequest, "expiry"},
		{"expiry not a duration", adminCaller, true, api.UILinksPost{Expiry: "soon"}, http.StatusBadRequest, "expiry"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", tt.body, tt.caller, tt.withCert)))
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.message) {
				t.Fatalf("answer %d %s, want %d with %q", w.Code, w.Body.String(), tt.status, tt.message)
			}
		})
	}
}

// A link signs in once, into a cookie with every protection, and the session acts as the
// certificate, within its role and lifetime.
func TestLinkSignsInOnce(t *testing.T) {
	a, now := testAPI(t)
	link := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{Certificate: adminFP}, unixCaller, false))))
	if link.URL != "https://127.0.0.1:8443/ui/#login="+secretOf(t, link) || !link.ExpiresAt.Equal(now.Add(DefaultLinkExpiry)) {
		t.Fatalf("link %+v", link)
	}

	login := func() *httptest.ResponseRecorder {
		return render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, link)}, nil, false)))
	}

	w := login()
	info := metadata[api.UISession](t, w)
	if info.Name != "alice" || info.Method != "link" || info.ReadOnly || info.CSRFToken == "" {
		t.Fatalf("session %+v", info)
	}

	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}

	c := cookies[0]
	if c.Name != auth.SessionCookie || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.MaxAge != int(SessionLifetime.Seconds()) || c.Path != "/" {
		t.Fatalf("cookie %+v: want HttpOnly, Secure, SameSite=Strict, Max-Age %s", c, SessionLifetime)
	}

	if w := login(); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "used or expired") {
		t.Fatalf("second use answered %d %s", w.Code, w.Body.String())
	}

	session := func(method string, csrf string) (*auth.Caller, error) {
		r := request(method, "/1.0/deployments", nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: c.Value})
		r.Header.Set(auth.BindingHeader, info.Binding)
		if csrf != "" {
			r.Header.Set(auth.CSRFHeader, csrf)
		}

		return Authenticate(r, a.DB, *now)
	}

	caller, err := session(http.MethodGet, "")
	if err != nil || !caller.IsAdmin() || caller.Fingerprint != adminFP {
		t.Fatalf("session caller %+v, %v", caller, err)
	}

	_, err = session(http.MethodPost, "")
	if status, _ := lxdapi.StatusErrorMatch(err); status != http.StatusForbidden {
		t.Fatalf("a write without the CSRF token: %v", err)
	}

	caller, err = session(http.MethodPost, info.CSRFToken)
	if err != nil || !caller.Trusted {
		t.Fatalf("a write with the CSRF token: %+v, %v", caller, err)
	}

	// The session ends with its lifetime.
	*now = now.Add(SessionLifetime + time.Second)
	caller, err = session(http.MethodGet, "")
	if err != nil || caller.Trusted {
		t.Fatalf("after its lifetime the session is %+v, %v", caller, err)
	}
}

func TestLinkExpires(t *testing.T) {
	a, now := testAPI(t)
	link := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{Expiry: "1m"}, adminCaller, true))))
	*now = now.Add(time.Minute)
	w := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, link)}, nil, false)))
	if w.Code != http.StatusForbidden {
		t.Fatalf("an expired link answered %d %s", w.Code, w.Body.String())
	}
}

// A read-only session reads, and is refused every write whatever it sends; deleting its
// certificate from the trust store ends it.
func TestReadOnlySession(t *testing.T) {
	a, now := testAPI(t)
	link := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{ReadOnly: true}, govCaller, true))))
	w := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, link)}, nil, false)))
	info := metadata[api.UISession](t, w)
	if !info.ReadOnly || info.CSRFToken != "" || info.CertificateType != api.CertificateTypeDeployments {
		t.Fatalf("read-only session %+v", info)
	}

	secret := w.Result().Cookies()[0].Value
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r := request(method, "/1.0/deployments/dep1/shapes/web/instances/x", nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: secret})
		r.Header.Set(auth.BindingHeader, info.Binding)
		r.Header.Set(auth.CSRFHeader, auth.CSRFToken(auth.SessionKey(secret, info.Binding)))
		_, err := Authenticate(r, a.DB, *now)
		if err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("%s from a read-only session: %v", method, err)
		}
	}

	// Signing out, or in with another link, needs neither a token nor a writable session.
	for _, path := range []string{"/ui/logout", "/ui/login"} {
		r := request(http.MethodPost, path, nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: secret})
		_, err := Authenticate(r, a.DB, *now)
		if err != nil {
			t.Fatalf("POST %s from a read-only session: %v", path, err)
		}
	}

	err := a.DB.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		c, err := db.GetCertificate(ctx, tx, govFP)
		if err != nil {
			return err
		}

		return db.DeleteCertificate(ctx, tx, c.ID)
	})
	if err != nil {
		t.Fatal(err)
	}

	r := request(http.MethodGet, "/1.0/operations", nil, nil, false)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: secret})
	r.Header.Set(auth.BindingHeader, info.Binding)
	caller, err := Authenticate(r, a.DB, *now)
	if err != nil || caller.Trusted {
		t.Fatalf("after its certificate left the trust store the session is %+v, %v", caller, err)
	}
}

func TestAssets(t *testing.T) {
	a := API{}
	get := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/ui/"+path, nil)
		r = mux.SetURLVars(r, map[string]string{"path": path})
		return render(t, a.Asset(r))
	}

	w := get("")
	if w.Code != http.StatusOK || w.Header().Get("Content-Security-Policy") != ContentSecurityPolicy || !strings.Contains(w.Body.String(), "<main") {
		t.Fatalf("index: %d %v", w.Code, w.Header())
	}

	if w := get("js/app.js"); w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
		t.Fatalf("app.js: %d %v", w.Code, w.Header())
	}

	for _, path := range []string{"../session.go", "js/../../assets.go", "nope.js", "assets.go", "js/"} {
		if w := get(path); w.Code != http.StatusNotFound {
			t.Errorf("%s answered %d", path, w.Code)
		}
	}
}

// Signing out ends the session in the database: the cookie's value is worthless after,
// even if a copy of it survived the browser clearing it.
func TestLogoutEndsSession(t *testing.T) {
	a, now := testAPI(t)
	link := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{}, adminCaller, true))))
	login := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, link)}, nil, false)))
	secret := login.Result().Cookies()[0].Value
	binding := metadata[api.UISession](t, login).Binding
	withCookie := func(method string, path string) *http.Request {
		r := request(method, path, nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: secret})
		r.Header.Set(auth.BindingHeader, binding)
		return r
	}

	w := render(t, a.Logout(withCookie(http.MethodPost, "/ui/logout")))
	if c := w.Result().Cookies(); w.Code != http.StatusOK || len(c) != 1 || c[0].MaxAge >= 0 {
		t.Fatalf("logout answered %d with cookies %v", w.Code, c)
	}

	caller, err := Authenticate(withCookie(http.MethodGet, "/1.0/deployments"), a.DB, *now)
	if err != nil || caller.Trusted {
		t.Fatalf("after signing out the cookie is %+v, %v", caller, err)
	}
}

// A browser with a trusted client certificate is signed in as it, with no session and no
// CSRF token: the origin check guards its writes.
func TestSessionOfCertificate(t *testing.T) {
	a, _ := testAPI(t)
	info := metadata[api.UISession](t, render(t, a.Session(request(http.MethodGet, "/ui/session", nil, adminCaller, true))))
	if info.Method != "certificate" || info.Name != "alice" || info.CSRFToken != "" || info.ReadOnly || info.ExpiresAt != nil {
		t.Fatalf("session of a certificate %+v", info)
	}
}
