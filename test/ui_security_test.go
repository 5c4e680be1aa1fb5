package test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// webSession is a browser signed in with a sign-in link, as the daemon sees one: the
// session cookie, and the binding and CSRF token the sign-in answered to the page.
type webSession struct {
	t       *testing.T
	address string
	client  *http.Client
	cookie  string
	info    api.UISession

	// lastCookie is the session cookie of the last answer that set one.
	lastCookie string
}

// browserClient talks HTTPS as a browser without a client certificate does.
func browserClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// signInWeb redeems a link's secret as the web view's page does (POST /ui/login).
func signInWeb(t *testing.T, d *daemon, link string) *webSession {
	t.Helper()
	s, status, message := trySignInWeb(t, d, link)
	if status != http.StatusOK {
		t.Fatalf("sign-in with %s answered %d %s", link, status, message)
	}

	return s
}

func trySignInWeb(t *testing.T, d *daemon, link string) (*webSession, int, string) {
	t.Helper()
	_, token, ok := strings.Cut(strings.TrimSpace(link), "/ui/#login=")
	if !ok {
		t.Fatalf("not a sign-in link: %q", link)
	}

	s := &webSession{t: t, address: d.HTTPSAddress, client: browserClient()}
	status, message, metadata := s.call(http.MethodPost, "/ui/login", map[string]string{"token": token}, nil)
	if status != http.StatusOK {
		return nil, status, message
	}

	must(t, json.Unmarshal(metadata, &s.info))
	s.cookie = s.lastCookie
	return s, status, message
}

// call sends a request carrying the session cookie and the given headers, and answers the
// status, the envelope's error and its metadata.
func (s *webSession) call(method string, path string, body any, headers map[string]string) (int, string, json.RawMessage) {
	s.t.Helper()
	var buf bytes.Buffer
	if body != nil {
		must(s.t, json.NewEncoder(&buf).Encode(body))
	}

	r, err := http.NewRequest(method, "https://"+s.address+path, &buf)
	must(s.t, err)
	if s.cookie != "" {
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: s.cookie})
	}

	for k, v := range headers {
		r.Header.Set(k, v)
	}

	resp, err := s.client.Do(r)
	must(s.t, err)
	defer func() { _ = resp.Body.Close() }()
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			s.lastCookie = c.Value
		}
	}

	var envelope struct {
		Error    string          `json:"error"`
		Metadata json.RawMessage `json:"metadata"`
	}

	_ = json.NewDecoder(resp.Body).Decode(&envelope)
	return resp.StatusCode, envelope.Error, envelope.Metadata
}

// bound are the headers the web view's page sends: the binding, and the CSRF token.
func (s *webSession) bound() map[string]string {
	return map[string]string{auth.BindingHeader: s.info.Binding, auth.CSRFHeader: s.info.CSRFToken}
}

// events opens /1.0/events as the page does, offering the given subprotocols.
func (s *webSession) events(protocols []string) (*websocket.Conn, *http.Response, error) {
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: protocols, HandshakeTimeout: 10 * time.Second}
	header := http.Header{}
	header.Set("Cookie", auth.SessionCookie+"="+s.cookie)
	return dialer.Dial("wss://"+s.address+"/1.0/events?type=lifecycle", header)
}

// expectStatus fails unless the call answered the status and an error naming want.
func expectStatus(t *testing.T, what string, status int, message string, wantStatus int, want string) {
	t.Helper()
	if status != wantStatus || !strings.Contains(message, want) {
		t.Fatalf("%s answered %d %q, want %d with %q", what, status, message, wantStatus, want)
	}
}

// identityValidUntil is a client certificate and key valid from an hour ago until notAfter.
func identityValidUntil(t *testing.T, notAfter time.Time) *identity {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(t, err)
	template := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "short-lived"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	return &identity{
		CertPEM:     string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:      string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
		Fingerprint: auth.Fingerprint(cert),
	}
}

// TestUISessionSecurity: issue 32 items 6, 7, 10, 11, 12 and 13, against the real daemon
// over HTTPS as a browser signed in with a link sends its requests (doc/ui.md).
func TestUISessionSecurity(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	unix := d.Unix(t)
	adminID := newIdentity(t)
	trustIdentity(t, unix, adminID, "web-admin", "client")
	must(t, unix.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	// cli is lxd-deploy on the unix socket, as the subtest; link prints a ui link.
	cli := func(t *testing.T) (*cliUser, func(args ...string) string) {
		u := newCLIUser(t, d)
		return u, func(args ...string) string {
			t.Helper()
			return strings.TrimSpace(u.ok(append([]string{"ui", "link"}, args...)...))
		}
	}

	t.Run("13 a local admin gets a link with no certificate named", func(t *testing.T) {
		_, link := cli(t)
		s := signInWeb(t, d, link())
		if s.info.Name != "lxd-deployd-web-local" || s.info.CertificateType != api.CertificateTypeClient {
			t.Fatalf("the unix socket's link signs in as %+v", s.info)
		}

		status, message, _ := s.call(http.MethodGet, "/1.0/deployments", nil, s.bound())
		expectStatus(t, "GET /1.0/deployments", status, message, http.StatusOK, "")
		again := signInWeb(t, d, link("--read-only"))
		if again.info.Fingerprint != s.info.Fingerprint || !again.info.ReadOnly {
			t.Fatalf("a second local link signs in as %+v, want the same identity read-only", again.info)
		}

		// Listed in the trust store and revocable like any entry: its sessions end.
		certs, err := unix.GetCertificates()
		must(t, err)
		listed := false
		for _, c := range certs {
			listed = listed || c.Fingerprint == s.info.Fingerprint && c.Name == "lxd-deployd-web-local"
		}

		if !listed {
			t.Fatalf("the local identity %s is not in the trust store %+v", s.info.Fingerprint, certs)
		}

		must(t, unix.DeleteCertificate(s.info.Fingerprint))
		status, message, _ = s.call(http.MethodGet, "/1.0/deployments", nil, s.bound())
		expectStatus(t, "GET /1.0/deployments after revoking the identity", status, message, http.StatusForbidden, "not trusted")
		if next := signInWeb(t, d, link()); next.info.Fingerprint == s.info.Fingerprint {
			t.Fatal("a link after revoking the local identity signs in as the revoked one")
		}
	})

	t.Run("7 the cookie alone is no session", func(t *testing.T) {
		_, link := cli(t)
		s := signInWeb(t, d, link("--certificate", adminID.Fingerprint))

		// What a page on another port of the host gets: the cookie (cookies ignore ports),
		// and whatever it can compute from it.
		status, message, metadata := s.call(http.MethodGet, "/ui/session", nil, nil)
		if status != http.StatusForbidden || strings.Contains(string(metadata), "csrf") {
			t.Fatalf("GET /ui/session with the cookie alone answered %d %q %s", status, message, metadata)
		}

		status, message, _ = s.call(http.MethodGet, "/1.0/deployments", nil, nil)
		expectStatus(t, "GET /1.0/deployments with the cookie alone", status, message, http.StatusForbidden, "not trusted")
		status, message, _ = s.call(http.MethodPost, "/1.0/deployments", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "replayed"}}, map[string]string{auth.CSRFHeader: auth.CSRFToken(s.cookie)})
		expectStatus(t, "a write with the cookie alone", status, message, http.StatusForbidden, "")
		if _, _, err := unix.GetDeployment("replayed"); err == nil {
			t.Fatal("a write with the cookie alone created a deployment")
		}

		_, resp, err := s.events([]string{"lxd-deployd"})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("the events websocket with the cookie alone: %v %+v", err, resp)
		}

		// The page, which holds the binding, is signed in everywhere.
		if s.info.Binding == "" {
			t.Fatal("the sign-in answered no binding")
		}

		status, message, metadata = s.call(http.MethodGet, "/ui/session", nil, s.bound())
		if status != http.StatusOK || !strings.Contains(string(metadata), s.info.CSRFToken) || strings.Contains(string(metadata), s.info.Binding) {
			t.Fatalf("GET /ui/session with the binding answered %d %q %s", status, message, metadata)
		}

		conn, resp, err := s.events([]string{"lxd-deployd", auth.BindingProtocolPrefix + s.info.Binding})
		if err != nil {
			t.Fatalf("the events websocket with the binding: %v", err)
		}

		_ = conn.Close()
		if got := resp.Header.Get("Sec-Websocket-Protocol"); got != "lxd-deployd" {
			t.Fatalf("the websocket answered subprotocol %q, want lxd-deployd (never the binding)", got)
		}
	})

	t.Run("6 a read-only session is a read-only caller", func(t *testing.T) {
		_, link := cli(t)
		d1, etag, err := unix.GetDeployment("dep1")
		must(t, err)
		put := d1.Writable()
		put.GovernorWebhookURL = "https://hooks.example.invalid/scale?token=hook-credential"
		put.Config = map[string]string{"user.db_password": "config-secret"}
		must(t, unix.UpdateDeployment("dep1", put, etag))
		shape := webShape("web", 0, 2)
		shape.InstanceTemplate.Config = map[string]string{"environment.DB_PASSWORD": "env-secret"}
		must(t, unix.CreateDeploymentShape("dep1", shape))
		s := signInWeb(t, d, link("--read-only", "--certificate", adminID.Fingerprint))
		status, message, metadata := s.call(http.MethodGet, "/1.0/deployments/dep1", nil, s.bound())
		expectStatus(t, "GET /1.0/deployments/dep1", status, message, http.StatusOK, "")
		if !strings.Contains(string(metadata), "hooks.example.invalid") || strings.Contains(string(metadata), "hook-credential") || strings.Contains(string(metadata), "config-secret") || strings.Contains(string(metadata), "env-secret") {
			t.Fatalf("a read-only session reads secrets: %s", metadata)
		}

		status, message, metadata = s.call(http.MethodGet, "/1.0/deployments/dep1/shapes/web", nil, s.bound())
		expectStatus(t, "GET the shape", status, message, http.StatusOK, "")
		if !strings.Contains(string(metadata), "environment.DB_PASSWORD") || strings.Contains(string(metadata), "env-secret") {
			t.Fatalf("a read-only session reads the shape's environment: %s", metadata)
		}

		for _, path := range []string{"/1.0/deployments/dep1/webhook/secret", "/1.0/certificates", "/1.0/deployments/dep1/keys", "/1.0/deployments/dep1/manifests"} {
			status, message, metadata = s.call(http.MethodGet, path, nil, s.bound())
			expectStatus(t, "GET "+path+" from a read-only session", status, message, http.StatusForbidden, "read-only web session")
			if len(metadata) > 0 && string(metadata) != "null" {
				t.Fatalf("GET %s answered %s", path, metadata)
			}
		}

	})

	t.Run("6 a read-only session has its own stream budget", func(t *testing.T) {
		_, link := cli(t)
		s := signInWeb(t, d, link("--read-only", "--certificate", adminID.Fingerprint))
		// Its event streams have their own budget: the certificate's own stream opens after
		// the session's 32, and the session's 33rd is refused.
		var conns []*websocket.Conn
		t.Cleanup(func() {
			for _, c := range conns {
				_ = c.Close()
			}
		})

		protocols := []string{"lxd-deployd", auth.BindingProtocolPrefix + s.info.Binding}
		for i := 0; i < 32; i++ {
			conn, _, err := s.events(protocols)
			if err != nil {
				t.Fatalf("stream %d of the read-only session: %v", i+1, err)
			}

			conns = append(conns, conn)
		}

		pair, err := tls.X509KeyPair([]byte(adminID.CertPEM), []byte(adminID.KeyPEM))
		must(t, err)
		dialer := websocket.Dialer{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true}, HandshakeTimeout: 10 * time.Second}
		conn, resp, err := dialer.Dial("wss://"+d.HTTPSAddress+"/1.0/events", nil)
		if err != nil {
			t.Fatalf("the admin certificate's own stream after its read-only session's 32: %v %+v", err, resp)
		}

		conns = append(conns, conn)
		_, resp, err = s.events(protocols)
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the read-only session's 33rd stream: %v %+v", err, resp)
		}
	})

	t.Run("10 a session changes no credentials", func(t *testing.T) {
		_, link := cli(t)
		s := signInWeb(t, d, link("--certificate", adminID.Fingerprint))
		before, err := unix.GetCertificates()
		must(t, err)
		for _, tt := range []struct {
			path string
			body any
		}{
			{"/1.0/certificates", lxdapi.CertificatesPost{Name: "from-the-web", Type: "client", Token: true}},
			{"/1.0/certificates", lxdapi.CertificatesPost{Name: "from-the-web", Type: "client", Certificate: strings.TrimSpace(newIdentity(t).CertPEM)}},
			{"/1.0/deployments/dep1/keys", api.DeploymentKeysPost{CertificateFingerprint: adminID.Fingerprint}},
			{"/1.0/deployments/dep1/webhook/secret", nil},
		} {
			status, message, _ := s.call(http.MethodPost, tt.path, tt.body, s.bound())
			expectStatus(t, "POST "+tt.path+" from an admin session", status, message, http.StatusForbidden, "web session cannot change credentials")
		}

		status, message, _ := s.call(http.MethodDelete, "/1.0/certificates/"+adminID.Fingerprint, nil, s.bound())
		expectStatus(t, "DELETE a certificate from an admin session", status, message, http.StatusForbidden, "web session cannot change credentials")
		after, err := unix.GetCertificates()
		must(t, err)
		if len(after) != len(before) {
			t.Fatalf("the trust store went from %d to %d entries", len(before), len(after))
		}

		// An admin session still reads them, and changes everything else.
		status, message, _ = s.call(http.MethodGet, "/1.0/certificates", nil, s.bound())
		expectStatus(t, "GET /1.0/certificates from an admin session", status, message, http.StatusOK, "")
	})

	t.Run("11 an expired certificate's links and sessions are refused", func(t *testing.T) {
		u, link := cli(t)
		notAfter := time.Now().Add(4 * time.Second).Truncate(time.Second)
		shortID := identityValidUntil(t, notAfter)
		trustIdentity(t, unix, shortID, "short-lived", "client")
		s := signInWeb(t, d, link("--certificate", shortID.Fingerprint))
		unused := link("--certificate", shortID.Fingerprint)
		time.Sleep(time.Until(notAfter) + 1500*time.Millisecond)

		status, message, _ := s.call(http.MethodGet, "/1.0/deployments", nil, s.bound())
		expectStatus(t, "a session of an expired certificate", status, message, http.StatusForbidden, "expired")
		_, status, message = trySignInWeb(t, d, unused)
		expectStatus(t, "signing in as an expired certificate", status, message, http.StatusForbidden, "expired")
		u.fails([]string{"expired"}, "ui", "link", "--certificate", shortID.Fingerprint)
	})

	t.Run("12 links are capped and need a key", func(t *testing.T) {
		u, link := cli(t)
		govID := newIdentity(t)
		trustIdentity(t, unix, govID, "web-gov", "deployments")
		u.fails([]string{"no deployment key", "deployment key create"}, "ui", "link", "--certificate", govID.Fingerprint)
		req := api.DeploymentKeysPost{CertificateFingerprint: govID.Fingerprint}
		req.Name = "watch"
		req.Role = api.DeploymentKeyRoleReadOnly
		must(t, unix.CreateDeploymentKey("dep1", req))

		var open []string
		for i := 0; i < 5; i++ {
			open = append(open, link("--read-only", "--certificate", govID.Fingerprint))
		}

		u.fails([]string{"unused sign-in links", "at most 5"}, "ui", "link", "--certificate", govID.Fingerprint)
		for made := 5; made < 20; made++ {
			signInWeb(t, d, open[0])
			open = append(open[1:], link("--read-only", "--certificate", govID.Fingerprint))
		}

		for _, l := range open {
			signInWeb(t, d, l)
		}

		u.fails([]string{"in the last hour", "at most 20"}, "ui", "link", "--certificate", govID.Fingerprint)
	})
}
