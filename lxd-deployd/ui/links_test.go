package ui

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// certificatePEM is a self-signed certificate valid between the two times.
func certificatePEM(t *testing.T, notBefore time.Time, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// testCertificatePEM is valid ten years either side of the tests' clock.
func testCertificatePEM(t *testing.T) string {
	t.Helper()
	return certificatePEM(t, time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC))
}

// giveKey binds a read-only key of a new deployment to the certificate.
func giveKey(ctx context.Context, tx *sql.Tx, fingerprint string) error {
	id, err := db.CreateDeployment(ctx, tx, api.DefaultProject, api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep-" + fingerprint[:8]}})
	if err != nil {
		return err
	}

	req := api.DeploymentKeysPost{CertificateFingerprint: fingerprint}
	req.Name = "k"
	req.Role = api.DeploymentKeyRoleReadOnly
	_, err = db.CreateKey(ctx, tx, id, req)
	return err
}

// addCertificate adds a trust store entry.
func addCertificate(t *testing.T, a *API, c db.Certificate) {
	t.Helper()
	err := a.DB.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateCertificate(ctx, tx, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// signIn makes a link as the caller and redeems it: the session's cookie and binding.
func signIn(t *testing.T, a *API, body api.UILinksPost, caller *auth.Caller, withCert bool) (string, api.UISession) {
	t.Helper()
	link := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", body, caller, withCert))))
	w := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, link)}, nil, false)))
	info := metadata[api.UISession](t, w)
	return w.Result().Cookies()[0].Value, info
}

// Issue 32 item 7: a page on another port of the host gets the session cookie (cookies
// ignore ports), but not the binding kept in the daemon's origin's storage: the cookie
// alone, or with a wrong binding, is no session, for reads, writes and GET /ui/session
// alike; the binding also works as the events websocket's subprotocol.
func TestCookieAloneIsNoSession(t *testing.T) {
	a, now := testAPI(t)
	cookie, info := signIn(t, a, api.UILinksPost{}, adminCaller, true)
	if info.Binding == "" || info.Binding == cookie {
		t.Fatalf("sign-in answered binding %q", info.Binding)
	}

	authenticate := func(method string, path string, headers map[string]string) *auth.Caller {
		t.Helper()
		r := request(method, path, nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
		for k, v := range headers {
			r.Header.Set(k, v)
		}

		caller, err := Authenticate(r, a.DB, *now)
		if err != nil {
			t.Fatalf("%s %s %v: %v", method, path, headers, err)
		}

		return caller
	}

	csrfOfCookie := auth.CSRFToken(cookie)
	for _, tt := range []struct {
		method  string
		path    string
		headers map[string]string
	}{
		{http.MethodGet, "/ui/session", nil},
		{http.MethodGet, "/1.0/deployments", nil},
		{http.MethodGet, "/1.0/deployments", map[string]string{auth.BindingHeader: "made-up"}},
		{http.MethodGet, "/1.0/events", map[string]string{"Sec-Websocket-Protocol": "lxd-deployd, lxd-deployd.session.made-up"}},
		{http.MethodPost, "/1.0/deployments", map[string]string{auth.CSRFHeader: csrfOfCookie}},
	} {
		if caller := authenticate(tt.method, tt.path, tt.headers); caller.Trusted {
			t.Errorf("%s %s with the cookie and %v is trusted as %s", tt.method, tt.path, tt.headers, caller)
		}
	}

	caller := authenticate(http.MethodGet, "/ui/session", map[string]string{auth.BindingHeader: info.Binding})
	if !caller.IsAdmin() || caller.Session == 0 {
		t.Fatalf("cookie and binding: %+v", caller)
	}

	session := metadata[api.UISession](t, render(t, a.Session(request(http.MethodGet, "/ui/session", nil, caller, false))))
	if session.CSRFToken != "" || session.Binding != "" {
		// GET /ui/session without the binding in the request has no session to answer for.
		t.Logf("session %+v", session)
	}

	r := request(http.MethodGet, "/ui/session", nil, caller, false)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	r.Header.Set(auth.BindingHeader, info.Binding)
	session = metadata[api.UISession](t, render(t, a.Session(r)))
	if session.CSRFToken != info.CSRFToken || session.Binding != "" {
		t.Fatalf("GET /ui/session answered %+v: want the CSRF token and never the binding", session)
	}

	caller = authenticate(http.MethodGet, "/1.0/events", map[string]string{"Sec-Websocket-Protocol": "lxd-deployd, lxd-deployd.session." + info.Binding})
	if !caller.IsAdmin() {
		t.Fatalf("the events websocket with the binding as subprotocol: %+v", caller)
	}

	caller = authenticate(http.MethodPost, "/1.0/deployments", map[string]string{auth.BindingHeader: info.Binding, auth.CSRFHeader: info.CSRFToken})
	if !caller.IsAdmin() {
		t.Fatalf("a write with binding and CSRF token: %+v", caller)
	}
}

// Issue 32 item 6: a session is marked as one (its own stream budget, no credentials), and
// a read-only one sees no secrets even as an admin certificate.
func TestSessionCallerMarks(t *testing.T) {
	a, now := testAPI(t)
	for _, readOnly := range []bool{false, true} {
		cookie, info := signIn(t, a, api.UILinksPost{ReadOnly: readOnly}, adminCaller, true)
		r := request(http.MethodGet, "/1.0/deployments", nil, nil, false)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
		r.Header.Set(auth.BindingHeader, info.Binding)
		caller, err := Authenticate(r, a.DB, *now)
		if err != nil {
			t.Fatal(err)
		}

		if caller.Session == 0 || caller.ReadOnly != readOnly || caller.SeesSecrets() == readOnly || caller.StreamKey() == adminCaller.StreamKey() {
			t.Fatalf("read-only %v: caller %+v sees secrets %v, streams as %q", readOnly, caller, caller.SeesSecrets(), caller.StreamKey())
		}
	}
}

// Issue 32 item 12: links are capped per trust store entry, open and per hour, and a
// deployments certificate needs a key (a metrics one gets none).
func TestLinkLimits(t *testing.T) {
	a, now := testAPI(t)
	make := func(caller *auth.Caller, withCert bool, body api.UILinksPost) *httptest.ResponseRecorder {
		return render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", body, caller, withCert)))
	}

	var open []api.UILink
	for i := 0; i < MaxOpenLinks; i++ {
		open = append(open, metadata[api.UILink](t, make(govCaller, true, api.UILinksPost{ReadOnly: true})))
	}

	w := make(govCaller, true, api.UILinksPost{ReadOnly: true})
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "unused sign-in links") {
		t.Fatalf("link %d: %d %s", MaxOpenLinks+1, w.Code, w.Body.String())
	}

	// Another entry has its own cap.
	metadata[api.UILink](t, make(adminCaller, true, api.UILinksPost{}))

	// Used links are no longer open, but count toward the hour's cap.
	for made := MaxOpenLinks; made < MaxLinksPerHour; made++ {
		used := open[0]
		open = open[1:]
		metadata[api.UISession](t, render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, used)}, nil, false))))
		open = append(open, metadata[api.UILink](t, make(govCaller, true, api.UILinksPost{ReadOnly: true})))
		*now = now.Add(time.Minute)
	}

	for _, l := range open {
		metadata[api.UISession](t, render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, l)}, nil, false))))
	}

	w = make(govCaller, true, api.UILinksPost{ReadOnly: true})
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "in the last hour") {
		t.Fatalf("link %d in an hour: %d %s", MaxLinksPerHour+1, w.Code, w.Body.String())
	}

	*now = now.Add(db.UILinkHistory)
	metadata[api.UILink](t, make(govCaller, true, api.UILinksPost{ReadOnly: true}))

	// A deployments certificate without a key, and a metrics certificate.
	const keyless, metrics = "cccc000000000000000000000000000000000000000000000000000000000003", "dddd000000000000000000000000000000000000000000000000000000000004"
	addCertificate(t, a, db.Certificate{Fingerprint: keyless, Type: api.CertificateTypeDeployments, Name: "keyless", Certificate: testCertificatePEM(t)})
	addCertificate(t, a, db.Certificate{Fingerprint: metrics, Type: api.CertificateTypeMetrics, Name: "prom", Certificate: testCertificatePEM(t)})
	keylessCaller := &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: keyless, CertificateType: api.CertificateTypeDeployments, Name: "keyless"}
	if w := make(keylessCaller, true, api.UILinksPost{}); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "deployment key create") {
		t.Fatalf("a keyless deployments certificate: %d %s", w.Code, w.Body.String())
	}

	if w := make(unixCaller, false, api.UILinksPost{Certificate: metrics}); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "metrics") {
		t.Fatalf("a metrics certificate: %d %s", w.Code, w.Body.String())
	}
}

// Issue 32 item 11: a certificate past its notAfter date gets no link, cannot redeem one
// made before, and its sessions end.
func TestExpiredCertificateSession(t *testing.T) {
	a, now := testAPI(t)
	const fp = "eeee000000000000000000000000000000000000000000000000000000000005"
	addCertificate(t, a, db.Certificate{Fingerprint: fp, Type: api.CertificateTypeClient, Name: "old", Certificate: certificatePEM(t, now.Add(-time.Hour), now.Add(time.Hour))})
	caller := &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: fp, CertificateType: api.CertificateTypeClient, Name: "old"}
	cookie, info := signIn(t, a, api.UILinksPost{}, caller, true)
	pending := metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{Expiry: "2h"}, caller, true))))

	*now = now.Add(time.Hour + time.Second)
	if w := render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", api.UILinksPost{Certificate: fp}, unixCaller, false))); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "expired") {
		t.Fatalf("a link for an expired certificate: %d %s", w.Code, w.Body.String())
	}

	if w := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, pending)}, nil, false))); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "expired") {
		t.Fatalf("signing in as an expired certificate: %d %s", w.Code, w.Body.String())
	}

	r := request(http.MethodGet, "/1.0/deployments", nil, nil, false)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	r.Header.Set(auth.BindingHeader, info.Binding)
	got, err := Authenticate(r, a.DB, *now)
	if status, _ := lxdapi.StatusErrorMatch(err); status != http.StatusForbidden || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a session of an expired certificate: %+v, %v", got, err)
	}
}

// Issue 32 item 13: over the unix socket with no certificate named, the link acts as the
// daemon's own entry, made once and reused, listed and revocable like any other.
func TestLocalIdentityLink(t *testing.T) {
	a, now := testAPI(t)
	link := func(body api.UILinksPost) api.UILink {
		return metadata[api.UILink](t, render(t, a.CreateLink(request(http.MethodPost, "/1.0/ui/links", body, unixCaller, false))))
	}

	first := link(api.UILinksPost{})
	second := link(api.UILinksPost{ReadOnly: true})
	if first.Certificate == "" || first.Certificate != second.Certificate || !second.ReadOnly {
		t.Fatalf("links %+v and %+v: want one identity for both", first, second)
	}

	var entry *db.Certificate
	err := a.DB.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		entry, err = db.GetCertificate(ctx, tx, first.Certificate)
		return err
	})
	if err != nil || entry.Name != LocalIdentityName || entry.Type != api.CertificateTypeClient {
		t.Fatalf("trust store entry %+v, %v", entry, err)
	}

	w := render(t, a.Login(request(http.MethodPost, "/ui/login", loginPost{Token: secretOf(t, first)}, nil, false)))
	info := metadata[api.UISession](t, w)
	if info.Name != LocalIdentityName || info.CertificateType != api.CertificateTypeClient || info.ReadOnly {
		t.Fatalf("session %+v", info)
	}

	// Revoked, its sessions end, and the next link makes a new identity.
	err = a.DB.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteCertificate(ctx, tx, entry.ID)
	})
	if err != nil {
		t.Fatal(err)
	}

	r := request(http.MethodGet, "/1.0/deployments", nil, nil, false)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: w.Result().Cookies()[0].Value})
	r.Header.Set(auth.BindingHeader, info.Binding)
	caller, err := Authenticate(r, a.DB, *now)
	if err != nil || caller.Trusted {
		t.Fatalf("a session of the revoked identity: %+v, %v", caller, err)
	}

	if third := link(api.UILinksPost{}); third.Certificate == first.Certificate {
		t.Fatalf("a link after revoking the identity reuses it: %+v", third)
	}
}
