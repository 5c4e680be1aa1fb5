package client

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenLifetime is how long the tokens a TokenSigner makes are valid; the daemon refuses
// anything longer than five minutes.
const TokenLifetime = 2 * time.Minute

// TokenSigner makes the short-lived JWTs a governor inside an instance presents: signed
// with the private key of a deployments certificate, for one deployment, one use each.
type TokenSigner struct {
	key         crypto.Signer
	method      jwt.SigningMethod
	fingerprint string
	audience    string
	subject     string
}

// NewTokenSigner loads a PEM key pair and prepares tokens for a deployment. subject names the
// governor's instance (informational: the daemon learns the instance from the transport).
func NewTokenSigner(certPEM string, keyPEM string, project string, deployment string, subject string) (*TokenSigner, error) {
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return nil, fmt.Errorf("load key pair: %w", err)
	}

	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}

	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", pair.PrivateKey)
	}

	method, err := signingMethod(signer)
	if err != nil {
		return nil, err
	}

	if project == "" {
		project = "default"
	}

	sum := sha256.Sum256(cert.Raw)
	return &TokenSigner{
		key:         signer,
		method:      method,
		fingerprint: hex.EncodeToString(sum[:]),
		audience:    "lxd-deployd:" + project + "/" + deployment,
		subject:     subject,
	}, nil
}

// signingMethod picks the one algorithm the daemon accepts for the key's type.
func signingMethod(key crypto.Signer) (jwt.SigningMethod, error) {
	switch k := key.Public().(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jwt.SigningMethodES256, nil
		case elliptic.P384():
			return jwt.SigningMethodES384, nil
		case elliptic.P521():
			return jwt.SigningMethodES512, nil
		}
	case ed25519.PublicKey:
		return jwt.SigningMethodEdDSA, nil
	case *rsa.PublicKey:
		return jwt.SigningMethodRS256, nil
	}

	return nil, fmt.Errorf("unsupported key type %T: use ECDSA, Ed25519 or RSA", key.Public())
}

// Fingerprint returns the signing certificate's fingerprint (the token's kid and iss).
func (s *TokenSigner) Fingerprint() string {
	return s.fingerprint
}

// Token signs a fresh token.
func (s *TokenSigner) Token() (string, error) {
	id := make([]byte, 16)
	_, err := rand.Read(id)
	if err != nil {
		return "", err
	}

	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer:    s.fingerprint,
		Subject:   s.subject,
		Audience:  jwt.ClaimStrings{s.audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(TokenLifetime)),
		ID:        hex.EncodeToString(id),
	}

	token := jwt.NewWithClaims(s.method, claims)
	token.Header["kid"] = s.fingerprint

	// Ed25519 keys sign as ed25519.PrivateKey; the others as their crypto.Signer.
	var key any = s.key
	if edKey, ok := s.key.(ed25519.PrivateKey); ok {
		key = edKey
	}

	return token.SignedString(key)
}
