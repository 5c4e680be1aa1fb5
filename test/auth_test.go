package test

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// route is one request of the authorization matrix.
type route struct {
	method, path string
	body         any

	// governor is true for the reads a deployment key of dep1 may do.
	governor bool
}

// managementRoutes is every management route with a body that is valid for it, in an order
// that works for an admin, so that only authorization decides the answer. victim is a
// certificate the routes may change and delete; gov a deployments certificate.
func managementRoutes(victim string, gov string) []route {
	return []route{
		{method: "GET", path: "/1.0/deployments", body: nil},
		{method: "POST", path: "/1.0/deployments", body: map[string]string{"name": "newdep"}},
		{method: "GET", path: "/1.0/deployments/dep1", governor: true},
		{method: "POST", path: "/1.0/deployments/dep1/shapes/web/scale-request", body: map[string]any{"target": 1}},
		{method: "POST", path: "/1.0/deployments/dep1/webhook/ping", body: nil},
		{method: "GET", path: "/1.0/deployments/dep1/webhook/deliveries", body: nil},
		{method: "GET", path: "/1.0/deployments/dep1/webhook/secret", body: nil},
		{method: "POST", path: "/1.0/deployments/dep1/webhook/secret", body: nil},
		{method: "GET", path: "/1.0/deployments/dep1/manifests", body: nil},
		{method: "GET", path: "/1.0/types", body: nil},
		{method: "PUT", path: "/1.0/deployments/dep1", body: map[string]string{"description": "x"}},
		{method: "PATCH", path: "/1.0/deployments/dep1", body: map[string]string{"description": "x"}},
		{method: "POST", path: "/1.0/deployments/other", body: map[string]string{"name": "renamed"}},
		{method: "GET", path: "/1.0/deployments/dep1/keys", body: nil},
		{method: "POST", path: "/1.0/deployments/dep1/keys", body: map[string]string{"name": "k9", "certificate_fingerprint": gov}},
		{method: "GET", path: "/1.0/deployments/dep1/keys/k1", body: nil},
		{method: "PUT", path: "/1.0/deployments/dep1/keys/k1", body: map[string]string{"role": "admin"}},
		{method: "POST", path: "/1.0/deployments/dep1/keys/k1", body: map[string]string{"name": "k1b"}},
		{method: "GET", path: "/1.0/deployments/dep1/shapes", governor: true},
		{method: "POST", path: "/1.0/deployments/dep1/shapes", body: map[string]any{"name": "s9", "scaling_maximum": 1}},
		{method: "GET", path: "/1.0/deployments/dep1/shapes/web", governor: true},
		{method: "PUT", path: "/1.0/deployments/dep1/shapes/web", body: map[string]any{"scaling_maximum": 4}},
		{method: "PATCH", path: "/1.0/deployments/dep1/shapes/web", body: map[string]any{"scaling_maximum": 4}},
		{method: "GET", path: "/1.0/deployments/dep1/shapes/web/revisions", governor: true},
		{method: "GET", path: "/1.0/deployments/dep1/shapes/web/revisions/1", governor: true},
		{method: "GET", path: "/1.0/deployments/dep1/activity", governor: true},
		{method: "POST", path: "/1.0/deployments/dep1/shapes/web/rollouts", body: nil},
		{method: "GET", path: "/1.0/deployments/dep1/shapes/web/rollouts", governor: true},
		{method: "POST", path: "/1.0/deployments/dep1/shapes/web/rollouts/1/pause", body: nil},
		{method: "POST", path: "/1.0/deployments/dep1/shapes/web", body: map[string]string{"name": "web2"}},
		{method: "GET", path: "/1.0/certificates", body: nil},
		{method: "POST", path: "/1.0/certificates", body: map[string]any{"name": "tok", "token": true}},
		{method: "GET", path: "/1.0/certificates/" + victim, body: nil},
		{method: "PUT", path: "/1.0/certificates/" + victim, body: map[string]string{"name": "renamed", "type": "client"}},
		{method: "PATCH", path: "/1.0/certificates/" + victim, body: map[string]string{"name": "renamed2"}},
		{method: "DELETE", path: "/1.0/deployments/dep1/shapes/web2", body: nil},
		{method: "DELETE", path: "/1.0/deployments/dep1/keys/k1b", body: nil},
		{method: "DELETE", path: "/1.0/deployments/renamed", body: nil},
		{method: "DELETE", path: "/1.0/certificates/" + victim, body: nil},
		{method: "GET", path: "/1.0/cluster", body: nil},
		{method: "GET", path: "/1.0/cluster/members", body: nil},
		{method: "POST", path: "/1.0/cluster/members", body: map[string]string{"server_name": "newm"}},
		{method: "GET", path: "/1.0/cluster/tokens", body: nil},
		{method: "GET", path: "/1.0/cluster/members/newm", body: nil},
		{method: "DELETE", path: "/1.0/cluster/members/newm", body: nil},
	}
}

func TestAuthorizationMatrixOverHTTPS(t *testing.T) {
	t.Parallel()
	// Clustered, so that the cluster certificate and the member's own certificate exist:
	// neither may use the management API (doc/security.md).
	d := startDaemon(t, daemonOptions{Cluster: true})
	unix := d.Unix(t)

	admin, govWithKey, govWithoutKey, stranger := newIdentity(t), newIdentity(t), newIdentity(t), newIdentity(t)
	trustIdentity(t, unix, admin, "admin", "client")
	trustIdentity(t, unix, govWithKey, "gov", "deployments")
	trustIdentity(t, unix, govWithoutKey, "gov2", "deployments")

	setup := func() {
		for _, name := range []string{"dep1", "other", "renamed", "newdep"} {
			_ = unix.DeleteDeployment(name, true)
		}

		for _, name := range []string{"dep1", "other"} {
			// A webhook nobody listens on: enough for the webhook routes to accept requests.
			must(t, unix.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: name}, DeploymentPut: api.DeploymentPut{GovernorWebhookURL: "http://127.0.0.1:9/hook"}}))
		}

		must(t, unix.CreateDeploymentShape("dep1", webShape("web", 0, 3)))
		must(t, unix.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: govWithKey.Fingerprint}))
	}

	victim := newIdentity(t)
	callers := []struct {
		name     string
		conn     *client.Server
		allowed  bool
		governor bool
	}{
		{"client certificate", d.HTTPS(t, admin), true, false},
		{"deployments certificate with an admin key", d.HTTPS(t, govWithKey), false, true},
		{"deployments certificate without a key", d.HTTPS(t, govWithoutKey), false, false},
		{"untrusted certificate", d.HTTPS(t, stranger), false, false},
		{"the cluster certificate", d.HTTPS(t, keyPairFiles(t, d, "cluster")), false, false},
		{"a member's own certificate", d.HTTPS(t, keyPairFiles(t, d, "member")), false, false},
		{"no certificate", d.HTTPS(t, nil), false, false},
	}

	for _, caller := range callers {
		setup()
		_ = unix.DeleteCertificate(victim.Fingerprint)
		trustIdentity(t, unix, victim, "victim", "client")

		for _, route := range managementRoutes(victim.Fingerprint, govWithoutKey.Fingerprint) {
			path := route.path
			_, _, err := caller.conn.Query(route.method, path, route.body, "")
			code, isAPIError := lxdapi.StatusErrorMatch(err)
			allowed := caller.allowed || (caller.governor && route.governor)
			if allowed && err != nil {
				t.Errorf("%s: %s %s: %v", caller.name, route.method, path, err)
			}

			if !allowed && (!isAPIError || code != http.StatusForbidden) {
				t.Errorf("%s: %s %s: expected 403, got %v", caller.name, route.method, path, err)
			}
		}
	}

	// The last refused caller changed nothing.
	_, _, err := unix.GetDeploymentShape("dep1", "web")
	must(t, err)
	_, _, err = unix.GetCertificate(victim.Fingerprint)
	must(t, err)

	// Secret values reach admins only: a deployment key (even an admin one) sees them
	// masked (doc/security.md#secrets).
	shape, etag, err := unix.GetDeploymentShape("dep1", "web")
	must(t, err)
	shape.InstanceTemplate.Config = map[string]string{"environment.DB_PASSWORD": "hunter2", "user.tier": "gold"}
	must(t, unix.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, etag))
	for _, c := range []struct {
		conn *client.Server
		want string
	}{{d.HTTPS(t, admin), "hunter2"}, {d.HTTPS(t, govWithKey), "[redacted]"}} {
		seen, _, err := c.conn.GetDeploymentShape("dep1", "web")
		must(t, err)
		if seen.InstanceTemplate.Config["environment.DB_PASSWORD"] != c.want || seen.InstanceTemplate.Config["user.tier"] != "gold" {
			t.Errorf("shape config seen as %v, want the password as %q", seen.InstanceTemplate.Config, c.want)
		}
	}
}

func TestTrustTokens(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	unix := d.Unix(t)

	token, err := unix.CreateCertificateToken("laptop", "client")
	must(t, err)
	if token.Fingerprint != d.Fingerprint || len(token.Addresses) == 0 || token.Token == "" {
		t.Fatalf("token: %+v", token)
	}

	// An untrusted client without a token, or with a wrong one, is refused.
	laptop := newIdentity(t)
	conn := d.HTTPS(t, laptop)
	expectCode(t, conn.CreateCertificate(lxdapi.CertificatesPost{}), 403, "no token")
	expectCode(t, conn.CreateCertificate(lxdapi.CertificatesPost{TrustToken: "0000"}), 403, "wrong token")

	// The right token trusts the caller's own certificate, once.
	must(t, conn.CreateCertificate(lxdapi.CertificatesPost{TrustToken: token.Token}))
	server, _, err := conn.GetServer()
	must(t, err)
	if server.Auth != "trusted" {
		t.Fatalf("after redeeming a token the client must be trusted: %+v", server)
	}

	_, err = conn.GetDeploymentNames()
	must(t, err)

	other := d.HTTPS(t, newIdentity(t))
	expectCode(t, other.CreateCertificate(lxdapi.CertificatesPost{TrustToken: token.Secret}), 403, "reused token")

	cert, _, err := unix.GetCertificate(laptop.Fingerprint)
	must(t, err)
	if cert.Name != "laptop" || cert.Type != "client" {
		t.Fatalf("certificate added by token: %+v", cert)
	}

	// A deployments token (old-style password field) gives a certificate without management access.
	govToken, err := unix.CreateCertificateToken("gov", "deployments")
	must(t, err)
	gov := d.HTTPS(t, newIdentity(t))
	must(t, gov.CreateCertificate(lxdapi.CertificatesPost{Password: govToken.Secret}))
	_, err = gov.GetDeploymentNames()
	expectCode(t, err, 403, "deployments certificate on the management API")
}

func TestLXDClientConnects(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	admin := newIdentity(t)
	trustIdentity(t, d.Unix(t), admin, "admin", "client")

	// LXD's own Go client connects to both transports and reads GET /1.0.
	viaUnix, err := lxd.ConnectLXDUnix(d.Socket, nil)
	must(t, err)
	server, _, err := viaUnix.GetServer()
	must(t, err)
	if server.Auth != "trusted" || server.Environment.CertificateFingerprint != d.Fingerprint {
		t.Fatalf("LXD client over unix: %+v", server)
	}

	viaTLS := d.LXDClient(t, admin)
	server, _, err = viaTLS.GetServer()
	must(t, err)
	if server.Auth != "trusted" || !viaTLS.HasExtension("deployments") {
		t.Fatalf("LXD client over TLS: %+v", server)
	}
}

// TestTLSChainCannotBorrowTrust sends a trusted admin certificate after the caller's own
// in the TLS chain: the handshake proves only the first one, so the caller stays untrusted.
func TestTLSChainCannotBorrowTrust(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	admin, stranger := newIdentity(t), newIdentity(t)
	trustIdentity(t, d.Unix(t), admin, "admin", "client")

	strangerPair, err := tls.X509KeyPair([]byte(stranger.CertPEM), []byte(stranger.KeyPEM))
	must(t, err)
	adminBlock, _ := pem.Decode([]byte(admin.CertPEM))
	strangerPair.Certificate = append(strangerPair.Certificate, adminBlock.Bytes)

	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{strangerPair}}}
	resp, err := (&http.Client{Transport: transport}).Get("https://" + d.HTTPSAddress + "/1.0/deployments")
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a borrowed certificate in the chain got HTTP %d, want 403", resp.StatusCode)
	}
}

// TestLXCRemoteAddWithOurToken: LXD's own client adds lxd-deployd as a remote with one of
// our trust tokens, then reads the management API through it.
func TestLXCRemoteAddWithOurToken(t *testing.T) {
	t.Parallel()
	lxcPath, err := exec.LookPath("lxc")
	if err != nil {
		t.Skip("lxc is not installed (apt-get install lxd): cannot check LXD's own client")
	}

	d := startDaemon(t, daemonOptions{})
	token, err := d.Unix(t).CreateCertificateToken("lxc-user", "client")
	must(t, err)

	conf := t.TempDir()
	lxc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(lxcPath, args...)
		cmd.Env = append(os.Environ(), "LXD_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lxc %v: %v\n%s", args, err, out)
		}

		return string(out)
	}

	lxc("remote", "add", "deployd", token.Token)
	must(t, d.Unix(t).CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "seen-by-lxc"}}))
	out := lxc("query", "deployd:/1.0/deployments")
	if !strings.Contains(out, "/1.0/deployments/seen-by-lxc") {
		t.Fatalf("lxc query through the added remote: %s", out)
	}
}
