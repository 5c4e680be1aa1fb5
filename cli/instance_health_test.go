package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestInstanceReportHealth sends reports through a governor socket the test serves: one
// PUT .../health per report, with a fresh bearer token, and bad input refused before
// anything is sent.
func TestInstanceReportHealth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeKeyPair(t, dir)
	socket := filepath.Join(dir, "gov.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}

	type request struct {
		method, path, auth string
		body               api.DeploymentInstanceHealthPut
	}

	got := make(chan request, 10)
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := request{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization")}
		_ = json.NewDecoder(r.Body).Decode(&req.body)
		got <- req
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"sync","status":"Success","status_code":200,"metadata":{}}`))
	})}

	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })

	run := func(args ...string) (string, error) {
		var stdout bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stdout, project: "default"}
		root := a.command()
		root.SetArgs(append([]string{"deployment", "shape", "instance", "report-health"}, args...))
		err := root.Execute()
		return stdout.String(), err
	}

	out, err := run("shop", "web", "web-1", "passing", "--output", "queue depth 3", "--socket", socket, "--cert", certFile, "--key", keyFile)
	if err != nil || !strings.Contains(out, "Instance web-1 reported passing") {
		t.Fatalf("report: %v\n%s", err, out)
	}

	req := <-got
	if req.method != http.MethodPut || req.path != "/1.0/deployments/shop/shapes/web/instances/web-1/health" {
		t.Errorf("sent %s %s", req.method, req.path)
	}

	if !strings.HasPrefix(req.auth, "Bearer ") || len(req.auth) < 50 {
		t.Errorf("no token: %q", req.auth)
	}

	if req.body.Status != api.HealthReportPassing || req.body.Output != "queue depth 3" {
		t.Errorf("body %+v", req.body)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"shop", "web", "web-1", "fine", "--socket", socket, "--cert", certFile, "--key", keyFile}, "status must be passing or failing"},
		{[]string{"shop", "web", "web-1", "failing", "--output", strings.Repeat("x", 2000), "--socket", socket, "--cert", certFile, "--key", keyFile}, "at most"},
		{[]string{"shop", "web", "web-1", "failing", "--socket", socket}, "--cert and --key"},
		{[]string{"shop", "web", "web-1", "failing", "--cert", certFile}, "--cert and --key are for --socket"},
		{[]string{"shop", "web", "bad/name", "failing", "--socket", socket, "--cert", certFile, "--key", keyFile}, "instance"},
	} {
		_, err := run(bad.args...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.args, err, bad.want)
		}
	}

	select {
	case req := <-got:
		t.Errorf("bad input was sent: %+v", req)
	default:
	}
}

// writeKeyPair writes a self-signed ECDSA certificate and its key, as a deployment key's
// key pair, and returns their paths.
func writeKeyPair(t *testing.T, dir string) (string, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gov"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}

	certFile, keyFile := filepath.Join(dir, "gov.crt"), filepath.Join(dir, "gov.key")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		err = os.WriteFile(file, pem.EncodeToMemory(block), 0o600)
		if err != nil {
			t.Fatal(err)
		}
	}

	return certFile, keyFile
}
