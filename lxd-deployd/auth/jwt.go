package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/golang-jwt/jwt/v5"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Limits of governor tokens (RFC 8725 practices: short-lived, pinned algorithms).
const (
	// MaxTokenLifetime is the longest exp - iat a token may have.
	MaxTokenLifetime = 5 * time.Minute

	// TokenLeeway absorbs clock skew between governor and daemon.
	TokenLeeway = 30 * time.Second

	// MaxTokenSize caps the encoded token, before any parsing.
	MaxTokenSize = 8 << 10
)

// asymmetricAlgorithms are the only JWT algorithms ever accepted.
var asymmetricAlgorithms = []string{"ES256", "ES384", "ES512", "EdDSA", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}

// TokenCertificate is a trust store entry a token may name in its kid.
type TokenCertificate struct {
	TrustedCertificate
	Certificate *x509.Certificate
}

// TokenVerifier checks governor JWTs signed with a deployments certificate's private key.
// It remembers the jti of every token it accepted until the token expires, so a token can
// be used once only.
type TokenVerifier struct {
	// replays, when set, remembers token ids for the whole cluster; otherwise they are
	// remembered in this process's memory.
	replays ReplayStore

	mu       sync.Mutex
	seen     map[string]time.Time // issuer + jti -> expiry
	prunedAt time.Time
}

// ReplayStore remembers the token ids accepted by any member of a cluster.
type ReplayStore interface {
	// Remember records issuer/jti until expires, and reports false when it was recorded
	// already (the token is being replayed). It prunes ids that expired before now.
	Remember(ctx context.Context, issuer string, jti string, expires time.Time, now time.Time) (bool, error)
}

// NewTokenVerifier returns a verifier with an empty in-memory replay cache, for a single
// process.
func NewTokenVerifier() *TokenVerifier {
	return &TokenVerifier{seen: map[string]time.Time{}}
}

// NewSharedTokenVerifier returns a verifier that remembers token ids in store, so that a
// token used on one member of a cluster is refused on every other, and after a restart.
func NewSharedTokenVerifier(store ReplayStore) *TokenVerifier {
	return &TokenVerifier{replays: store, seen: map[string]time.Time{}}
}

// unauthorized is a 401 with a reason that helps the governor's author.
func unauthorized(format string, a ...any) error {
	return lxdapi.StatusErrorf(http.StatusUnauthorized, "governor token refused: "+format, a...)
}

// algorithmsFor pins the signing algorithms to the certificate's key type, so that neither
// "none", nor HMAC keyed with the public key, nor any mismatched algorithm gets through.
func algorithmsFor(cert *x509.Certificate) ([]string, error) {
	switch key := cert.PublicKey.(type) {
	case *ecdsa.PublicKey:
		switch key.Curve {
		case elliptic.P256():
			return []string{"ES256"}, nil
		case elliptic.P384():
			return []string{"ES384"}, nil
		case elliptic.P521():
			return []string{"ES512"}, nil
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}, nil
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}, nil
	}

	return nil, fmt.Errorf("unsupported key type %T", cert.PublicKey)
}

// Verify checks a bearer token and returns the caller it identifies: a deployments
// certificate, with the token's audience, for the access checks to hold against the
// deployment being accessed. lookup finds a trust store entry by fingerprint.
func (v *TokenVerifier) Verify(raw string, lookup func(fingerprint string) (*TokenCertificate, error), now time.Time) (*Caller, error) {
	if len(raw) > MaxTokenSize {
		return nil, unauthorized("token is larger than %d bytes", MaxTokenSize)
	}

	// Say plainly why "none" or HMAC is refused; the parser below refuses them too.
	unverified, _, err := jwt.NewParser().ParseUnverified(raw, &jwt.RegisteredClaims{})
	if err == nil && !slices.Contains(asymmetricAlgorithms, unverified.Method.Alg()) {
		return nil, unauthorized("signing method %s is not accepted: sign with the certificate's private key (%s)", unverified.Method.Alg(), strings.Join(asymmetricAlgorithms, ", "))
	}

	var cert *TokenCertificate
	claims := &jwt.RegisteredClaims{}
	parser := jwt.NewParser(
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(TokenLeeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
		// Only asymmetric algorithms; keyfunc narrows further to the key's own type.
		jwt.WithValidMethods(asymmetricAlgorithms),
	)

	_, err = parser.ParseWithClaims(raw, claims, func(token *jwt.Token) (any, error) {
		kid, _ := token.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("the header has no kid: set it to the certificate fingerprint")
		}

		found, err := lookup(strings.ToLower(kid))
		if err != nil || found == nil {
			return nil, fmt.Errorf("unknown key %q: the certificate is not in the trust store", kid)
		}

		cert = found
		if cert.Type != api.CertificateTypeDeployments {
			return nil, fmt.Errorf("certificate %s has type %q: governor tokens need a %q certificate", kid, cert.Type, api.CertificateTypeDeployments)
		}

		allowed, err := algorithmsFor(cert.Certificate)
		if err != nil {
			return nil, err
		}

		if !slices.Contains(allowed, token.Method.Alg()) {
			return nil, fmt.Errorf("algorithm %s does not match the certificate's key: use %s", token.Method.Alg(), strings.Join(allowed, " or "))
		}

		return cert.Certificate.PublicKey, nil
	})
	if err != nil {
		return nil, unauthorized("%s", tokenErrorReason(err))
	}

	return v.checkClaims(claims, cert, now)
}

// tokenErrorReason turns the parser's error into words for the governor's author.
func tokenErrorReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token has expired: sign a fresh one for each request"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token is not valid yet: check the governor's clock"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "token lacks a required claim (exp): " + err.Error()
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "signature is invalid: sign with the private key of the certificate named in kid"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "token is malformed"
	}

	return err.Error()
}

// checkClaims enforces what the parser does not: issuer, lifetime, jti and replay.
func (v *TokenVerifier) checkClaims(claims *jwt.RegisteredClaims, cert *TokenCertificate, now time.Time) (*Caller, error) {
	if claims.Issuer != cert.Fingerprint {
		return nil, unauthorized("iss must be the certificate fingerprint %s", cert.Fingerprint)
	}

	if claims.IssuedAt == nil {
		return nil, unauthorized("iat is required")
	}

	if claims.ExpiresAt.Sub(claims.IssuedAt.Time) > MaxTokenLifetime {
		return nil, unauthorized("token lives longer than %s (exp - iat)", MaxTokenLifetime)
	}

	if now.Before(cert.Certificate.NotBefore) || now.After(cert.Certificate.NotAfter) {
		return nil, unauthorized("certificate %s is outside its validity dates", cert.Fingerprint)
	}

	if len(claims.Audience) != 1 || !strings.HasPrefix(claims.Audience[0], TokenAudiencePrefix) {
		return nil, unauthorized("aud must be one value, %s<project>/<deployment>", TokenAudiencePrefix)
	}

	if claims.ID == "" {
		return nil, unauthorized("jti is required: a unique id per token")
	}

	err := v.remember(cert.Fingerprint, claims.ID, claims.ExpiresAt.Add(TokenLeeway), now)
	if err != nil {
		return nil, err
	}

	return &Caller{
		Protocol:        ProtocolGovernor,
		Trusted:         true,
		Fingerprint:     cert.Fingerprint,
		CertificateType: cert.Type,
		Name:            cert.Name,
		Audience:        claims.Audience[0],
		Subject:         claims.Subject,
	}, nil
}

// remember records a token id until it expires, refusing one seen before: in the shared
// store when there is one, else in memory, where expired ids are dropped every few seconds
// rather than on every request.
func (v *TokenVerifier) remember(issuer string, id string, expires time.Time, now time.Time) error {
	jti := issuer + "/" + id
	if v.replays != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fresh, err := v.replays.Remember(ctx, issuer, id, expires, now)
		if err != nil {
			return fmt.Errorf("record governor token id: %w", err)
		}

		if !fresh {
			return unauthorized("token was already used (jti %q): sign a fresh one for each request", jti)
		}

		return nil
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	if now.Sub(v.prunedAt) > 10*time.Second {
		v.prunedAt = now
		for id, expiry := range v.seen {
			if expiry.Before(now) {
				delete(v.seen, id)
			}
		}
	}

	_, seen := v.seen[jti]
	if seen {
		return unauthorized("token was already used (jti %q): sign a fresh one for each request", jti)
	}

	v.seen[jti] = expires
	return nil
}

// TokenAudiencePrefix starts every token audience: lxd-deployd:<project>/<deployment>.
const TokenAudiencePrefix = "lxd-deployd:"

// TokenAudience returns the audience a token for a deployment carries.
func TokenAudience(project string, deployment string) string {
	return TokenAudiencePrefix + project + "/" + deployment
}
