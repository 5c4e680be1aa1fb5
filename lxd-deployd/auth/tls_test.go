package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

func makeCert(t *testing.T, notBefore time.Time, notAfter time.Time) *x509.Certificate {
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

	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}

	return cert
}

func TestAuthenticateTLS(t *testing.T) {
	now := time.Now()
	valid := makeCert(t, now.Add(-time.Hour), now.Add(time.Hour))
	expired := makeCert(t, now.Add(-2*time.Hour), now.Add(-time.Hour))
	future := makeCert(t, now.Add(time.Hour), now.Add(2*time.Hour))
	unknown := makeCert(t, now.Add(-time.Hour), now.Add(time.Hour))

	trusted := []TrustedCertificate{
		{Fingerprint: Fingerprint(valid), Type: "client", Name: "admin"},
		{Fingerprint: Fingerprint(expired), Type: "client", Name: "old"},
		{Fingerprint: Fingerprint(future), Type: "client", Name: "early"},
	}

	caller := AuthenticateTLS([]*x509.Certificate{valid}, trusted, now)
	if !caller.Trusted || caller.Name != "admin" || !caller.IsAdmin() {
		t.Fatalf("valid trusted certificate: got %+v", caller)
	}

	for name, cert := range map[string]*x509.Certificate{"expired": expired, "not yet valid": future, "unknown": unknown} {
		caller = AuthenticateTLS([]*x509.Certificate{cert}, trusted, now)
		if caller.Trusted || caller.IsAdmin() {
			t.Errorf("%s certificate must not be trusted: %+v", name, caller)
		}
	}

	// A trusted certificate appended to an unknown one proves nothing: only the first, whose
	// key the handshake checked, counts.
	caller = AuthenticateTLS([]*x509.Certificate{unknown, valid}, trusted, now)
	if caller.Trusted {
		t.Fatal("a trusted certificate later in the chain must not be trusted")
	}

	caller = AuthenticateTLS(nil, trusted, now)
	if caller.Trusted {
		t.Fatal("no certificate must not be trusted")
	}

	deployments := []TrustedCertificate{{Fingerprint: Fingerprint(valid), Type: "deployments", Name: "gov"}}
	caller = AuthenticateTLS([]*x509.Certificate{valid}, deployments, now)
	if !caller.Trusted || caller.IsAdmin() {
		t.Fatalf("deployments certificate is trusted but not admin: %+v", caller)
	}
}
