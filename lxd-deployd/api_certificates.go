package main

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
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// trustTokenLifetime is how long a trust token can be used.
const trustTokenLifetime = 24 * time.Hour

// certificatesAPI serves /1.0/certificates: the trust store.
type certificatesAPI struct {
	db *db.Cluster

	// serverFingerprint and addresses go into trust tokens so that a client can find and
	// verify this server.
	serverFingerprint string
	addresses         func() []string
}

func (a certificatesAPI) list(r *http.Request) response.Response {
	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	var certs []db.Certificate
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		certs, err = db.GetCertificates(ctx, tx)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return rest.ListResponse(level, certs,
		func(c db.Certificate) string { return api.CertificateURL(c.Fingerprint) },
		func(c db.Certificate) lxdapi.Certificate { return c.API() })
}

// create serves three requests, as LXD's POST /1.0/certificates does: an admin asking for
// a trust token, an admin adding a certificate, and an untrusted client redeeming a token
// to get its own TLS certificate trusted.
func (a certificatesAPI) create(r *http.Request) response.Response {
	var req lxdapi.CertificatesPost
	err := rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	caller := auth.CallerFromContext(r.Context())
	// Public for token redemption, so the route's access check cannot say it: a web
	// session adds no certificate and makes no trust token (access_credentials.go).
	err = refuseSessionCredentials(caller, true)
	if err != nil {
		return response.SmartError(err)
	}

	if !caller.IsAdmin() {
		return a.redeemToken(r, caller, req)
	}

	if req.Type == "" {
		req.Type = api.CertificateTypeClient
	}

	err = validate.CertificateType(req.Type)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	if req.Restricted || len(req.Projects) > 0 {
		return response.SmartError(rest.BadRequest(errRestricted))
	}

	if req.Token {
		token, err := a.issueToken(r.Context(), req.Name, req.Type)
		if err != nil {
			return response.SmartError(err)
		}

		return response.SyncResponse(token)
	}

	cert, err := certificateFromRequest(r, req.Certificate)
	if err != nil {
		return response.SmartError(err)
	}

	fingerprint, err := a.trust(r.Context(), cert, req.Name, req.Type)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseLocation(nil, api.CertificateURL(fingerprint))
}

var errRestricted = lxdapi.StatusErrorf(http.StatusBadRequest, "restricted certificates are not supported: use a deployments certificate with deployment keys to limit access")

// issueToken creates a single-use trust token. Only a hash of its secret is stored.
func (a certificatesAPI) issueToken(ctx context.Context, name string, certType string) (*api.CertificateToken, error) {
	if name == "" {
		return nil, rest.BadRequest(errNameRequired)
	}

	secretBytes := make([]byte, 32)
	_, err := rand.Read(secretBytes)
	if err != nil {
		return nil, err
	}

	secret := hex.EncodeToString(secretBytes)
	expiresAt := time.Now().Add(trustTokenLifetime).UTC()
	err = a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.CreateCertificateToken(ctx, tx, db.CertificateToken{Name: name, Type: certType, SecretHash: auth.HashSecret(secret), ExpiresAt: expiresAt})
	})
	if err != nil {
		return nil, err
	}

	token := lxdapi.CertificateAddToken{
		ClientName:  name,
		Fingerprint: a.serverFingerprint,
		Addresses:   a.addresses(),
		Secret:      secret,
		ExpiresAt:   expiresAt,
	}

	return &api.CertificateToken{CertificateAddToken: token, Token: token.String()}, nil
}

var errNameRequired = lxdapi.StatusErrorf(http.StatusBadRequest, "a name is required for a trust token: it names the client that redeems it")

// redeemToken trusts the TLS certificate of an untrusted caller that presents a valid
// token, once.
func (a certificatesAPI) redeemToken(r *http.Request, caller *auth.Caller, req lxdapi.CertificatesPost) response.Response {
	if caller.Trusted {
		return response.SmartError(rest.Forbidden("only admins may add certificates: a %s certificate may not", caller.CertificateType))
	}

	secret := req.TrustToken
	if secret == "" {
		secret = req.Password
	}

	if secret == "" {
		return response.SmartError(rest.Forbidden("not trusted: present a trust token (trust_token) from an admin"))
	}

	// Accept the whole encoded token as well as its secret, as people paste either.
	decoded, err := shared.CertificateTokenDecode(secret)
	if err == nil && decoded.Secret != "" {
		secret = decoded.Secret
	}

	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return response.SmartError(rest.Forbidden("redeeming a trust token needs a TLS client certificate"))
	}

	cert := r.TLS.PeerCertificates[0]
	var fingerprint string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		token, err := db.ConsumeCertificateToken(ctx, tx, auth.HashSecret(secret), time.Now())
		if err != nil {
			return err
		}

		fingerprint = auth.Fingerprint(cert)
		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: token.Type, Name: token.Name, Certificate: encodePEM(cert)})
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseLocation(nil, api.CertificateURL(fingerprint))
}

// trust adds a certificate to the trust store and returns its fingerprint.
func (a certificatesAPI) trust(ctx context.Context, cert *x509.Certificate, name string, certType string) (string, error) {
	if name == "" {
		name = cert.Subject.CommonName
	}

	fingerprint := auth.Fingerprint(cert)
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: certType, Name: name, Certificate: encodePEM(cert)})
		return err
	})

	return fingerprint, err
}

// certificateFromRequest parses the certificate field (base64 DER as LXD sends it, or PEM),
// falling back to the caller's own TLS certificate as LXD does.
func certificateFromRequest(r *http.Request, field string) (*x509.Certificate, error) {
	if field == "" {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return nil, rest.BadRequest(errCertificateRequired)
		}

		return r.TLS.PeerCertificates[0], nil
	}

	der := []byte(nil)
	block, _ := pem.Decode([]byte(field))
	if block != nil {
		der = block.Bytes
	} else {
		decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(field))
		if err != nil {
			return nil, rest.BadRequest(errCertificateFormat)
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

var (
	errCertificateRequired = lxdapi.StatusErrorf(http.StatusBadRequest, "certificate is required: send it in the certificate field (PEM or base64 DER)")
	errCertificateFormat   = lxdapi.StatusErrorf(http.StatusBadRequest, "certificate must be PEM or base64-encoded DER")
)

func encodePEM(cert *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
}

// certificateFingerprint returns the {fingerprint} path variable.
func certificateFingerprint(r *http.Request) string {
	return strings.ToLower(mux.Vars(r)["fingerprint"])
}

func (a certificatesAPI) get(r *http.Request) response.Response {
	var cert *db.Certificate
	err := a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		cert, err = db.GetCertificate(ctx, tx, certificateFingerprint(r))
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseETag(cert.API(), certificateWritable(cert.API()))
}

// certificateWritable is what PUT may change, and what the ETag covers.
func certificateWritable(c lxdapi.Certificate) lxdapi.CertificatePut {
	return lxdapi.CertificatePut{Name: c.Name, Type: c.Type, Restricted: c.Restricted, Projects: c.Projects, Certificate: c.Certificate}
}

func (a certificatesAPI) put(r *http.Request) response.Response {
	return a.update(r, false)
}

func (a certificatesAPI) patch(r *http.Request) response.Response {
	return a.update(r, true)
}

// update changes a certificate's name and type; the certificate itself cannot change (add
// the new one and remove the old one instead).
func (a certificatesAPI) update(r *http.Request, patch bool) response.Response {
	body, err := rest.ReadBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetCertificate(ctx, tx, certificateFingerprint(r))
		if err != nil {
			return err
		}

		writable := certificateWritable(current.API())
		err = response.CheckETag(r, writable)
		if err != nil {
			return err
		}

		var put lxdapi.CertificatePut
		if patch {
			put, err = rest.PatchBase(writable)
			if err != nil {
				return err
			}
		}

		err = rest.UnmarshalBody(body, &put)
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
			return rest.BadRequest(err)
		}

		return db.UpdateCertificate(ctx, tx, current.ID, put.Name, put.Type)
	})

	return response.SmartError(err)
}

func (a certificatesAPI) delete(r *http.Request) response.Response {
	err := a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		cert, err := db.GetCertificate(ctx, tx, certificateFingerprint(r))
		if err != nil {
			return err
		}

		return db.DeleteCertificate(ctx, tx, cert.ID)
	})

	return response.SmartError(err)
}
