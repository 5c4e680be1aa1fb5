package test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestCLIRemoteOverHTTPS adds the daemon as a remote of another user with a trust token,
// in both forms (token alone, address and --token), and uses it over HTTPS.
func TestCLIRemoteOverHTTPS(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	admin := d.Unix(t)
	local := newCLIUser(t, d)
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))

	issue := func(name string) string {
		out := local.ok("config", "trust", "add", "--name", name)
		header, token, found := strings.Cut(strings.TrimSpace(out), "\n")
		if !found || header != "Client "+name+" certificate add token:" {
			t.Fatalf("trust add --name printed %q", out)
		}

		return token
	}

	// "remote add NAME TOKEN": addresses from the token.
	laptop := newCLIUser(t, d)
	token := issue("laptop")
	if out := laptop.ok("remote", "add", "prod", token); out != "Remote prod added (https://"+d.HTTPSAddress+")\n" {
		t.Errorf("remote add printed %q", out)
	}

	laptopCert, err := os.ReadFile(filepath.Join(laptop.confDir, "client.crt"))
	must(t, err)
	pinned, err := os.ReadFile(filepath.Join(laptop.confDir, "servercerts", "prod.crt"))
	must(t, err)
	if string(pinned) != d.ServerCert {
		t.Errorf("pinned certificate differs from the server's")
	}

	certs, err := admin.GetCertificates()
	must(t, err)
	found := false
	for _, c := range certs {
		if c.Name == "laptop" && c.Type == api.CertificateTypeClient && strings.TrimSpace(c.Certificate) == strings.TrimSpace(string(laptopCert)) {
			found = true
		}
	}

	if !found {
		t.Errorf("laptop's certificate is not trusted: %+v", certs)
	}

	if out := laptop.ok("deployment", "list", "prod:", "-f", "csv"); out != "dep1,,,\n" {
		t.Errorf("deployment list prod: %q", out)
	}

	laptop.ok("deployment", "create", "prod:dep2", "--description", "over HTTPS")
	deployment, _, err := admin.GetDeployment("dep2")
	must(t, err)
	if deployment.Description != "over HTTPS" {
		t.Errorf("deployment created over HTTPS: %+v", deployment)
	}

	// switch, list, get-default, remove.
	laptop.ok("remote", "switch", "prod")
	if out := laptop.ok("remote", "get-default"); out != "prod\n" {
		t.Errorf("get-default: %q", out)
	}

	if out := laptop.ok("deployment", "list", "-f", "csv"); !contains(out, "dep1,", "dep2,over HTTPS") {
		t.Errorf("deployment list on the default remote: %q", out)
	}

	if out := laptop.ok("remote", "list", "-f", "csv"); !contains(out, "prod (current),https://"+d.HTTPSAddress+"\n", "local,unix://") {
		t.Errorf("remote list csv: %q", out)
	}

	if out := laptop.ok("remote", "list"); !contains(out, "| NAME", "| prod (current) | https://"+d.HTTPSAddress) {
		t.Errorf("remote list:\n%s", out)
	}

	laptop.fails([]string{"default remote", "remote switch"}, "remote", "remove", "prod")
	laptop.fails([]string{"cannot be removed"}, "remote", "remove", "local")
	laptop.ok("remote", "switch", "local")
	laptop.ok("remote", "remove", "prod")
	if out := laptop.ok("remote", "list", "-f", "csv"); strings.Contains(out, "prod") {
		t.Errorf("remote list after remove: %q", out)
	}

	_, err = os.Stat(filepath.Join(laptop.confDir, "servercerts", "prod.crt"))
	if !os.IsNotExist(err) {
		t.Errorf("pinned certificate left after remove: %v", err)
	}

	laptop.fails([]string{`remote "prod" does not exist`}, "deployment", "list", "prod:")

	// "remote add NAME https://addr --token TOKEN", for another user.
	desktop := newCLIUser(t, d)
	desktop.ok("remote", "add", "prod", "https://"+d.HTTPSAddress, "--token", issue("desktop"))
	if out := desktop.ok("deployment", "show", "prod:dep2"); !contains(out, "description: over HTTPS") {
		t.Errorf("show over HTTPS:\n%s", out)
	}

	// A used token, and a token whose fingerprint is not the server's, are refused and
	// leave nothing behind.
	stranger := newCLIUser(t, d)
	stranger.fails([]string{"trust token"}, "remote", "add", "prod", token)
	forged := forgeTokenFingerprint(t, issue("stranger"))
	stranger.fails([]string{"does not match the trust token", "refusing"}, "remote", "add", "prod", forged)
	if out := stranger.ok("remote", "list", "-f", "csv"); strings.Contains(out, "prod") {
		t.Errorf("failed remote add left a remote: %q", out)
	}

	_, err = os.Stat(filepath.Join(stranger.confDir, "servercerts", "prod.crt"))
	if !os.IsNotExist(err) {
		t.Errorf("failed remote add left a pinned certificate: %v", err)
	}

	stranger.fails([]string{"without a trust token"}, "remote", "add", "prod", "https://"+d.HTTPSAddress)
	stranger.fails([]string{"does not trust this client"}, "remote", "add", "prod", "https://"+d.HTTPSAddress, "--accept-certificate")
}

// forgeTokenFingerprint returns the token with another server fingerprint, as a token
// pointing at an impostor would have.
func forgeTokenFingerprint(t *testing.T, token string) string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(token)
	must(t, err)
	var fields map[string]any
	must(t, json.Unmarshal(data, &fields))
	fields["fingerprint"] = strings.Repeat("0", 64)
	data, err = json.Marshal(fields)
	must(t, err)
	return base64.StdEncoding.EncodeToString(data)
}
