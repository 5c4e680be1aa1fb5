package client

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/canonical/lxd/shared"
)

// keyPair makes a self-signed certificate and its key in PEM, as lxc does.
func keyPair(t *testing.T) (certPEM string, keyPEM string) {
	t.Helper()
	cert, key, err := shared.GenerateMemCert(true, shared.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}

	return string(cert), string(key)
}

// tlsServer answers GET /1.0 with whether the connection was resumed and the client
// certificate's fingerprint it saw, closing every connection after its answer, as the
// daemon's TLS listener is configured (client certificates requested, TLS 1.3).
func tlsServer(t *testing.T) (server *httptest.Server, certPEM string) {
	t.Helper()
	certPEM, keyPEM := keyPair(t)
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}

	server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fingerprint := ""
		if len(r.TLS.PeerCertificates) > 0 {
			sum := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
			fingerprint = hex.EncodeToString(sum[:])
		}

		w.Header().Set("Connection", "close")
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"config": map[string]string{"resumed": map[bool]string{true: "yes", false: "no"}[r.TLS.DidResume], "fingerprint": fingerprint}}})
	}))
	server.TLS = &tls.Config{MinVersion: tls.VersionTLS13, ClientAuth: tls.RequestClientCert, Certificates: []tls.Certificate{pair}}
	server.StartTLS()
	t.Cleanup(server.Close)
	return server, certPEM
}

// A governor's new connections resume the TLS session, and the daemon still sees its
// client certificate on them (it checks the trust store by it on every request).
func TestHTTPSResumesSessions(t *testing.T) {
	server, serverCert := tlsServer(t)
	clientCert, clientKey := keyPair(t)
	block, _ := pem.Decode([]byte(clientCert))
	sum := sha256.Sum256(block.Bytes)
	want := hex.EncodeToString(sum[:])
	c, err := ConnectHTTPS(server.URL, &ConnectionArgs{TLSClientCert: clientCert, TLSClientKey: clientKey, TLSServerCert: serverCert})
	if err != nil {
		t.Fatal(err)
	}

	var resumed []string
	for i := 0; i < 3; i++ {
		info, _, err := c.GetServer()
		if err != nil {
			t.Fatal(err)
		}

		if info.Config["fingerprint"] != want {
			t.Fatalf("request %d: the server saw client certificate %q, want %q", i, info.Config["fingerprint"], want)
		}

		resumed = append(resumed, info.Config["resumed"].(string))
	}

	if strings.Join(resumed, " ") != "no yes yes" {
		t.Fatalf("resumed: %v, want a full handshake, then resumed sessions", resumed)
	}
}

// The pin holds: a server with another certificate is refused.
func TestHTTPSRefusesAnotherServerCertificate(t *testing.T) {
	server, _ := tlsServer(t)
	otherCert, _ := keyPair(t)
	c, err := ConnectHTTPS(server.URL, &ConnectionArgs{TLSServerCert: otherCert})
	if err != nil {
		t.Fatal(err)
	}

	_, _, err = c.GetServer()
	if err == nil || !strings.Contains(err.Error(), "does not match the pinned one") {
		t.Fatalf("got %v, want the pinned certificate refused", err)
	}
}
