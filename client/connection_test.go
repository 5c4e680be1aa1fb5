package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// keyPair makes a self-signed P-384 certificate, as LXD and the daemon do, in PEM.
func keyPair(t *testing.T) (certPEM string, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
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
