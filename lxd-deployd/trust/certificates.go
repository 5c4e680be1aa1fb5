// Package trust keeps the daemon's credentials: the trust store (certificates and the
// single-use trust tokens that add them) and the deployment keys that bind a deployments
// certificate to a deployment with a role. Handlers parse and respond; the rules about
// what may be stored, and how, are here.
package trust

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"strings"
	"time"

	"github.com/canonical/lxd/shared"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// TokenLifetime is how long a trust token can be used.
const TokenLifetime = 24 * time.Hour

// Certificates is the trust store.
type Certificates struct {
	DB *db.Cluster

	// ServerFingerprint and Addresses go into trust tokens so that a client can find and
	// verify this server.
	ServerFingerprint string
	Addresses         func() []string
}

var (
	errRestricted          = lxdapi.StatusErrorf(http.StatusBadRequest, "restricted certificates are not supported: use a deployments certificate with deployment keys to limit access")
	errNameRequired        = lxdapi.StatusErrorf(http.StatusBadRequest, "a name is required for a trust token: it names the client that redeems it")
	errCertificateRequired = lxdapi.StatusErrorf(http.StatusBadRequest, "certificate is required: send it in the certificate field (PEM or base64 DER)")
	errCertificateFormat   = lxdapi.StatusErrorf(http.StatusBadRequest, "certificate must be PEM or base64-encoded DER")
)

// badRequest wraps a validation error as a 400.
func badRequest(err error) error {
	return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
}

// forbidden is a 403 naming what the caller lacks.
func forbidden(format string, a ...any) error {
	return lxdapi.StatusErrorf(http.StatusForbidden, format, a...)
}

// List returns every trusted certificate.
func (s Certificates) List(ctx context.Context) ([]db.Certificate, error) {
	var certs []db.Certificate
	err := s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		certs, err = db.GetCertificates(ctx, tx)
		return err
	})

	return certs, err
}

// Get returns the trusted certificate of that fingerprint.
func (s Certificates) Get(ctx context.Context, fingerprint string) (*db.Certificate, error) {
	var cert *db.Certificate
	err := s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		cert, err = db.GetCertificate(ctx, tx, fingerprint)
		return err
	})

	return cert, err
}

// Create serves an admin's POST /1.0/certificates: a trust token when req.Token is set,
// otherwise the certificate of req.Certificate (or the caller's own, the first of peers)
// added to the store, whose fingerprint it returns.
func (s Certificates) Create(ctx context.Context, req lxdapi.CertificatesPost, peers []*x509.Certificate) (*api.CertificateToken, string, error) {
	if req.Type == "" {
		req.Type = api.CertificateTypeClient
	}

	err := validate.CertificateType(req.Type)
	if err != nil {
		return nil, "", badRequest(err)
	}

	if req.Restricted || len(req.Projects) > 0 {
		return nil, "", badRequest(errRestricted)
	}

	if req.Token {
		token, err := s.issueToken(ctx, req.Name, req.Type)
		return token, "", err
	}

	cert, err := certificateOrPeer(req.Certificate, peers)
	if err != nil {
		return nil, "", err
	}

	fingerprint, err := s.add(ctx, cert, req.Name, req.Type)
	return nil, fingerprint, err
}

// issueToken creates a single-use trust token. Only a hash of its secret is stored.
func (s Certificates) issueToken(ctx context.Context, name string, certType string) (*api.CertificateToken, error) {
	if name == "" {
		return nil, badRequest(errNameRequired)
	}

	secretBytes := make([]byte, 32)
	_, err := rand.Read(secretBytes)
	if err != nil {
		return nil, err
	}

	secret := hex.EncodeToString(secretBytes)
	expiresAt := time.Now().Add(TokenLifetime).UTC()
	err = s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.CreateCertificateToken(ctx, tx, db.CertificateToken{Name: name, Type: certType, SecretHash: auth.HashSecret(secret), ExpiresAt: expiresAt})
	})
	if err != nil {
		return nil, err
	}

	token := lxdapi.CertificateAddToken{
		ClientName:  name,
		Fingerprint: s.ServerFingerprint,
		Addresses:   s.Addresses(),
		Secret:      secret,
		ExpiresAt:   expiresAt,
	}

	return &api.CertificateToken{CertificateAddToken: token, Token: token.String()}, nil
}

// Redeem trusts the TLS certificate (the first of peers) of an untrusted caller that
// presents a valid token, once, and returns its fingerprint.
func (s Certificates) Redeem(ctx context.Context, caller *auth.Caller, req lxdapi.CertificatesPost, peers []*x509.Certificate) (string, error) {
	if caller.Trusted {
		return "", forbidden("only admins may add certificates: a %s certificate may not", caller.CertificateType)
	}

	secret := req.TrustToken
	if secret == "" {
		secret = req.Password
	}

	if secret == "" {
		return "", forbidden("not trusted: present a trust token (trust_token) from an admin")
	}

	// Accept the whole encoded token as well as its secret, as people paste either.
	decoded, err := shared.CertificateTokenDecode(secret)
	if err == nil && decoded.Secret != "" {
		secret = decoded.Secret
	}

	if len(peers) == 0 {
		return "", forbidden("redeeming a trust token needs a TLS client certificate")
	}

	cert := peers[0]
	var fingerprint string
	err = s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		token, err := db.ConsumeCertificateToken(ctx, tx, auth.HashSecret(secret), time.Now())
		if err != nil {
			return err
		}

		fingerprint = auth.Fingerprint(cert)
		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: token.Type, Name: token.Name, Certificate: EncodePEM(cert)})
		return err
	})

	return fingerprint, err
}

// add adds a certificate to the trust store and returns its fingerprint.
func (s Certificates) add(ctx context.Context, cert *x509.Certificate, name string, certType string) (string, error) {
	if name == "" {
		name = cert.Subject.CommonName
	}

	fingerprint := auth.Fingerprint(cert)
	err := s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: certType, Name: name, Certificate: EncodePEM(cert)})
		return err
	})

	return fingerprint, err
}

// certificateOrPeer parses the certificate field, falling back to the caller's own TLS
// certificate (the first of peers) as LXD does.
func certificateOrPeer(field string, peers []*x509.Certificate) (*x509.Certificate, error) {
	if field != "" {
		return ParseCertificate(field)
	}

	if len(peers) == 0 {
		return nil, badRequest(errCertificateRequired)
	}

	return peers[0], nil
}

// ParseCertificate parses a certificate field: base64 DER as LXD sends it, PEM, or base64
// of a PEM file.
func ParseCertificate(field string) (*x509.Certificate, error) {
	der := []byte(nil)
	block, _ := pem.Decode([]byte(field))
	if block != nil {
		der = block.Bytes
	} else {
		decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(field))
		if err != nil {
			return nil, badRequest(errCertificateFormat)
		}

		// base64 of a PEM file is common too.
		block, _ = pem.Decode(decoded)
		if block != nil {
			der = block.Bytes
		} else {
			der = decoded
		}
	}

	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "certificate is not a valid X.509 certificate: %v", err)
	}

	return cert, nil
}

// EncodePEM is how the trust store keeps a certificate.
func EncodePEM(cert *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
}

// Writable is what PUT may change of a certificate, and what its ETag covers.
func Writable(c lxdapi.Certificate) lxdapi.CertificatePut {
	return lxdapi.CertificatePut{Name: c.Name, Type: c.Type, Restricted: c.Restricted, Projects: c.Projects, Certificate: c.Certificate}
}

// Update changes a certificate's name and type to what decode makes of its writable
// fields (the request's body over them, once its ETag matches); the certificate itself
// cannot change (add the new one and remove the old one instead).
func (s Certificates) Update(ctx context.Context, fingerprint string, decode func(current lxdapi.CertificatePut) (lxdapi.CertificatePut, error)) error {
	return s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetCertificate(ctx, tx, fingerprint)
		if err != nil {
			return err
		}

		put, err := decode(Writable(current.API()))
		if err != nil {
			return err
		}

		if put.Restricted || len(put.Projects) > 0 {
			return errRestricted
		}

		if put.Certificate != "" && put.Certificate != current.Certificate {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "the certificate itself cannot be changed: add the new certificate and remove this one")
		}

		if put.Name == "" {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "certificate name must not be empty")
		}

		err = validate.CertificateType(put.Type)
		if err != nil {
			return badRequest(err)
		}

		return db.UpdateCertificate(ctx, tx, current.ID, put.Name, put.Type)
	})
}

// Delete removes a certificate from the trust store, and with it its deployment keys.
func (s Certificates) Delete(ctx context.Context, fingerprint string) error {
	return s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cert, err := db.GetCertificate(ctx, tx, fingerprint)
		if err != nil {
			return err
		}

		return db.DeleteCertificate(ctx, tx, cert.ID)
	})
}
