package test

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestServerOverBothTransports(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})

	server, _, err := d.Unix(t).GetServer()
	must(t, err)
	if server.Auth != "trusted" || server.APIVersion != "1.0" || !contains(strings.Join(server.APIExtensions, ","), "deployments") {
		t.Fatalf("unix GET /1.0: %+v", server)
	}

	if server.Environment.LXDStatus != "unavailable" || !contains(server.Environment.LXDError, d.LXDSocket) {
		t.Fatalf("without LXD the daemon must say why: %+v", server.Environment)
	}

	untrusted, _, err := d.HTTPS(t, newIdentity(t)).GetServer()
	must(t, err)
	if untrusted.Auth != "untrusted" || len(untrusted.AuthMethods) != 1 || untrusted.AuthMethods[0] != "tls" || untrusted.Environment != nil {
		t.Fatalf("untrusted GET /1.0 must say untrusted and hide the environment: %+v", untrusted)
	}

	// TLS 1.2 is refused; the certificate carries a DNS SAN.
	_, err = tls.Dial("tcp", d.HTTPSAddress, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
	if err == nil {
		t.Fatal("a TLS 1.2 handshake must be refused")
	}

	conn, err := tls.Dial("tcp", d.HTTPSAddress, &tls.Config{InsecureSkipVerify: true})
	must(t, err)
	defer func() { _ = conn.Close() }()
	cert := conn.ConnectionState().PeerCertificates[0]
	if len(cert.DNSNames) == 0 || conn.ConnectionState().Version != tls.VersionTLS13 {
		t.Fatalf("server certificate DNS names %v, TLS version %x", cert.DNSNames, conn.ConnectionState().Version)
	}
}

func TestManagementAPIOverUnix(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	c := d.Unix(t)

	must(t, c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{Description: "web app", Config: map[string]string{"user.team": "blue"}}}))
	expectCode(t, c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}), 409, "duplicate deployment")
	expectCode(t, c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "-x"}}), 400, "bad name")
	must(t, c.CreateDeploymentShape("dep1", webShape("web", 1, 3)))
	expectCode(t, c.CreateDeploymentShape("dep1", webShape("db", 2, 1)), 400, "min > max")
	expectCode(t, c.CreateDeploymentShape("nope", webShape("web", 1, 3)), 404, "unknown deployment")

	// Keys bind to trusted deployments certificates only.
	gov := newIdentity(t)
	admin := newIdentity(t)
	trustIdentity(t, c, gov, "gov", "deployments")
	trustIdentity(t, c, admin, "admin", "client")
	key := api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: gov.Fingerprint}
	must(t, c.CreateDeploymentKey("dep1", key))
	expectCode(t, c.CreateDeploymentKey("dep1", key), 409, "duplicate key")
	key.Name = "k2"
	key.CertificateFingerprint = admin.Fingerprint
	expectCode(t, c.CreateDeploymentKey("dep1", key), 400, "key on a client certificate")
	key.CertificateFingerprint = gov.Fingerprint
	key.Role = ""
	must(t, c.CreateDeploymentKey("dep1", key))
	k2, keyETag, err := c.GetDeploymentKey("dep1", "k2")
	must(t, err)
	if k2.Role != "read-only" || k2.CertificateFingerprint != gov.Fingerprint {
		t.Fatalf("key k2: %+v", k2)
	}

	// Reads: recursion and ETags.
	deployment, etag, err := c.GetDeployment("dep1")
	must(t, err)
	if deployment.DeploymentShapes["web"].ScalingMaximum != 3 || deployment.Config["user.team"] != "blue" || etag == "" {
		t.Fatalf("deployment: %+v etag %q", deployment, etag)
	}

	deployment.Description = "changed"
	must(t, c.UpdateDeployment("dep1", deployment.DeploymentPut, etag))
	expectCode(t, c.UpdateDeployment("dep1", deployment.DeploymentPut, etag), 412, "stale ETag")
	must(t, c.UpdateDeploymentKey("dep1", "k2", api.DeploymentKeyPut{Role: "admin", Description: "now admin"}, keyETag))
	expectCode(t, c.UpdateDeploymentKey("dep1", "k2", api.DeploymentKeyPut{Role: "owner"}, ""), 400, "bad role")

	shape, shapeETag, err := c.GetDeploymentShape("dep1", "web")
	must(t, err)
	shape.ScalingMaximum = 5
	must(t, c.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, shapeETag))
	expectCode(t, c.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, shapeETag), 412, "stale shape ETag")

	names, err := c.GetDeploymentShapeNames("dep1")
	must(t, err)
	keys, err := c.GetDeploymentKeys("dep1")
	must(t, err)
	if len(names) != 1 || names[0] != "web" || len(keys) != 2 {
		t.Fatalf("shapes %v keys %v", names, keys)
	}

	// Renames.
	must(t, c.RenameDeployment("dep1", api.DeploymentPost{Name: "app"}))
	must(t, c.RenameDeploymentShape("app", "web", api.DeploymentShapePost{Name: "www"}))
	must(t, c.RenameDeploymentKey("app", "k1", api.DeploymentKeyPost{Name: "governor"}))
	_, _, err = c.GetDeployment("dep1")
	expectCode(t, err, 404, "renamed deployment")
	_, _, err = c.GetDeploymentShape("app", "www")
	must(t, err)

	// Oversize bodies are refused with 413 and change nothing.
	_, _, err = c.Query(http.MethodPost, "/1.0/deployments", map[string]string{"name": "big", "description": strings.Repeat("x", 2<<20)}, "")
	expectCode(t, err, 413, "oversize body")
	_, _, err = c.GetDeployment("big")
	expectCode(t, err, 404, "refused create")

	// Projects scope deployments.
	p2 := c.UseProject("p2")
	must(t, p2.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "app"}}))
	list, _, err := c.Query(http.MethodGet, "/1.0/deployments?project=p2", nil, "")
	must(t, err)
	if !bytes.Contains(list.Metadata, []byte("/1.0/deployments/app?project=p2")) {
		t.Fatalf("URLs of non-default projects carry ?project=: %s", list.Metadata)
	}

	// Deleting the certificate revokes its keys.
	must(t, c.DeleteCertificate(gov.Fingerprint))
	keys, err = c.GetDeploymentKeys("app")
	must(t, err)
	if len(keys) != 0 {
		t.Fatalf("keys survive their certificate: %+v", keys)
	}

	must(t, c.DeleteDeploymentShape("app", "www", false))
	must(t, c.DeleteDeployment("app", false))
	_, _, err = c.GetDeployment("app")
	expectCode(t, err, 404, "deleted deployment")
}

func TestStatePersistsAcrossRestart(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	c := d.Unix(t)
	must(t, c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, c.CreateDeploymentShape("dep1", webShape("web", 0, 2)))
	fingerprint := d.Fingerprint

	d.Restart(t)
	if d.Fingerprint != fingerprint {
		t.Fatal("the server certificate must survive a restart")
	}

	shape, _, err := d.Unix(t).GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingMaximum != 2 {
		t.Fatalf("shape after restart: %+v", shape)
	}
}
