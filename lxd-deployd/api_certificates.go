package main

import (
	"crypto/x509"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/trust"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// certificatesAPI serves /1.0/certificates: the trust store (package trust).
type certificatesAPI struct {
	db *db.Cluster

	// serverFingerprint and addresses go into trust tokens so that a client can find and
	// verify this server.
	serverFingerprint string
	addresses         func() []string
}

func (a certificatesAPI) store() trust.Certificates {
	return trust.Certificates{DB: a.db, ServerFingerprint: a.serverFingerprint, Addresses: a.addresses}
}

func (a certificatesAPI) list(r *http.Request) response.Response {
	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	certs, err := a.store().List(r.Context())
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
	// session adds no certificate and makes no trust token.
	err = authz.RefuseSessionCredentials(caller, true)
	if err != nil {
		return response.SmartError(err)
	}

	var fingerprint string
	if !caller.IsAdmin() {
		fingerprint, err = a.store().Redeem(r.Context(), caller, req, peerCertificates(r))
	} else {
		var token *api.CertificateToken
		token, fingerprint, err = a.store().Create(r.Context(), req, peerCertificates(r))
		if err == nil && token != nil {
			return response.SyncResponse(token)
		}
	}

	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseLocation(nil, api.CertificateURL(fingerprint))
}

// peerCertificates are the caller's TLS client certificates, none off TLS.
func peerCertificates(r *http.Request) []*x509.Certificate {
	if r.TLS == nil {
		return nil
	}

	return r.TLS.PeerCertificates
}

// certificateFingerprint returns the {fingerprint} path variable.
func certificateFingerprint(r *http.Request) string {
	return strings.ToLower(mux.Vars(r)["fingerprint"])
}

func (a certificatesAPI) get(r *http.Request) response.Response {
	cert, err := a.store().Get(r.Context(), certificateFingerprint(r))
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseETag(cert.API(), trust.Writable(cert.API()))
}

func (a certificatesAPI) put(r *http.Request) response.Response {
	return a.update(r, false)
}

func (a certificatesAPI) patch(r *http.Request) response.Response {
	return a.update(r, true)
}

// update changes a certificate's name and type (trust.Certificates.Update).
func (a certificatesAPI) update(r *http.Request, patch bool) response.Response {
	body, err := rest.ReadBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SmartError(a.store().Update(r.Context(), certificateFingerprint(r), rest.EditFromBody[lxdapi.CertificatePut](r, body, patch)))
}

func (a certificatesAPI) delete(r *http.Request) response.Response {
	return response.SmartError(a.store().Delete(r.Context(), certificateFingerprint(r)))
}
