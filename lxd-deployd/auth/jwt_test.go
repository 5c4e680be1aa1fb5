package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/golang-jwt/jwt/v5"
)

type tokenFixture struct {
	key    *ecdsa.PrivateKey
	cert   *x509.Certificate
	fp     string
	lookup func(string) (*TokenCertificate, error)
	now    time.Time
}

func newTokenFixture(t *testing.T) *tokenFixture {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gov"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	cert, _ := x509.ParseCertificate(der)
	f := &tokenFixture{key: key, cert: cert, fp: Fingerprint(cert), now: now}
	f.lookup = func(fp string) (*TokenCertificate, error) {
		if fp != f.fp {
			return nil, nil
		}

		return &TokenCertificate{TrustedCertificate: TrustedCertificate{Fingerprint: f.fp, Type: "deployments", Name: "gov"}, Certificate: f.cert}, nil
	}

	return f
}

// claims returns valid claims for dep1; tests break one thing at a time.
func (f *tokenFixture) claims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": f.fp,
		"aud": TokenAudience("default", "dep1"),
		"sub": "gov1",
		"iat": f.now.Unix(),
		"exp": f.now.Add(2 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(big.NewInt(f.now.UnixNano()).Bytes()),
	}
}

func (f *tokenFixture) sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims, kid string) string {
	t.Helper()
	token := jwt.NewWithClaims(method, claims)
	if kid != "" {
		token.Header["kid"] = kid
	}

	signed, err := token.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}

	return signed
}

func expectRefused(t *testing.T, name string, err error, status int, reason string) {
	t.Helper()
	code, ok := lxdapi.StatusErrorMatch(err)
	if !ok || code != status {
		t.Errorf("%s: expected HTTP %d, got %v", name, status, err)
		return
	}

	if !strings.Contains(err.Error(), reason) {
		t.Errorf("%s: reason %q does not mention %q", name, err.Error(), reason)
	}
}

func TestTokenAccepted(t *testing.T) {
	f := newTokenFixture(t)
	v := NewTokenVerifier()
	caller, err := v.Verify(f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), f.fp), f.lookup, f.now)
	if err != nil {
		t.Fatal(err)
	}

	if !caller.Trusted || caller.Fingerprint != f.fp || caller.Audience != "lxd-deployd:default/dep1" || caller.Protocol != ProtocolGovernor || caller.IsAdmin() {
		t.Fatalf("caller: %+v", caller)
	}
}

func TestTokenAttacks(t *testing.T) {
	f := newTokenFixture(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.cert.Raw})

	without := func(claim string) jwt.MapClaims {
		c := f.claims()
		delete(c, claim)
		return c
	}

	with := func(claim string, value any) jwt.MapClaims {
		c := f.claims()
		c[claim] = value
		return c
	}

	noneToken := func() string {
		token := jwt.NewWithClaims(jwt.SigningMethodNone, f.claims())
		token.Header["kid"] = f.fp
		signed, _ := token.SignedString(jwt.UnsafeAllowNoneSignatureType)
		return signed
	}()

	tests := []struct {
		name   string
		token  string
		reason string
	}{
		{"alg none", noneToken, "signing method"},
		{"HS256 keyed with the certificate", f.sign(t, jwt.SigningMethodHS256, publicPEM, f.claims(), f.fp), "signing method"},
		{"HS256 keyed with the raw certificate", f.sign(t, jwt.SigningMethodHS256, f.cert.Raw, f.claims(), f.fp), "signing method"},
		{"algorithm mismatch", f.sign(t, jwt.SigningMethodES256, other, f.claims(), f.fp), "does not match the certificate's key"},
		{"signed by another key", f.sign(t, jwt.SigningMethodES384, mustKey(t), f.claims(), f.fp), "signature is invalid"},
		{"expired", f.sign(t, jwt.SigningMethodES384, f.key, with("exp", f.now.Add(-time.Minute).Unix()), f.fp), "expired"},
		{"not yet valid", f.sign(t, jwt.SigningMethodES384, f.key, with("nbf", f.now.Add(time.Minute).Unix()), f.fp), "not valid yet"},
		{"issued in the future", f.sign(t, jwt.SigningMethodES384, f.key, with("iat", f.now.Add(time.Minute).Unix()), f.fp), "not valid yet"},
		{"missing exp", f.sign(t, jwt.SigningMethodES384, f.key, without("exp"), f.fp), "exp"},
		{"missing iat", f.sign(t, jwt.SigningMethodES384, f.key, without("iat"), f.fp), "iat"},
		{"missing jti", f.sign(t, jwt.SigningMethodES384, f.key, without("jti"), f.fp), "jti"},
		{"lives too long", f.sign(t, jwt.SigningMethodES384, f.key, with("exp", f.now.Add(time.Hour).Unix()), f.fp), "longer than"},
		{"wrong issuer", f.sign(t, jwt.SigningMethodES384, f.key, with("iss", "someone"), f.fp), "iss"},
		{"audience not ours", f.sign(t, jwt.SigningMethodES384, f.key, with("aud", "https://example.com"), f.fp), "aud"},
		{"two audiences", f.sign(t, jwt.SigningMethodES384, f.key, with("aud", []string{TokenAudience("default", "dep1"), TokenAudience("default", "dep2")}), f.fp), "aud"},
		{"unknown kid", f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), strings.Repeat("0", 64)), "unknown key"},
		{"no kid", f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), ""), "kid"},
		{"oversize", strings.Repeat("a", MaxTokenSize+1), "larger than"},
		{"garbage", "not.a.token", "malformed"},
	}

	for _, tt := range tests {
		_, err := NewTokenVerifier().Verify(tt.token, f.lookup, f.now)
		expectRefused(t, tt.name, err, http.StatusUnauthorized, tt.reason)
	}
}

func TestTokenReplayAndRevocation(t *testing.T) {
	f := newTokenFixture(t)
	v := NewTokenVerifier()
	token := f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), f.fp)
	_, err := v.Verify(token, f.lookup, f.now)
	if err != nil {
		t.Fatal(err)
	}

	_, err = v.Verify(token, f.lookup, f.now)
	expectRefused(t, "replayed jti", err, http.StatusUnauthorized, "already used")

	// A revoked certificate is no longer in the trust store.
	revoked := func(string) (*TokenCertificate, error) { return nil, nil }
	_, err = NewTokenVerifier().Verify(f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), f.fp), revoked, f.now)
	expectRefused(t, "revoked certificate", err, http.StatusUnauthorized, "unknown key")

	// A client certificate cannot sign governor tokens.
	client := func(fp string) (*TokenCertificate, error) {
		c, _ := f.lookup(fp)
		c.Type = "client"
		return c, nil
	}

	_, err = NewTokenVerifier().Verify(f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), f.fp), client, f.now)
	expectRefused(t, "client certificate", err, http.StatusUnauthorized, "deployments")
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	return key
}
