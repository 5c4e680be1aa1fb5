package client

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetServer returns GET /1.0: what the server is and whether it trusts us.
func (s *Server) GetServer() (*api.Server, string, error) {
	var server api.Server
	etag, err := s.queryStruct(http.MethodGet, "/1.0", nil, "", &server)
	if err != nil {
		return nil, "", err
	}

	return &server, etag, nil
}

// GetCertificateFingerprints returns the fingerprints of the trust store.
func (s *Server) GetCertificateFingerprints() ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, path("certificates"), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetCertificates returns the trust store.
func (s *Server) GetCertificates() ([]lxdapi.Certificate, error) {
	var certs []lxdapi.Certificate
	_, err := s.queryStruct(http.MethodGet, path("certificates")+"?recursion=1", nil, "", &certs)
	return certs, err
}

// GetCertificate returns one certificate (a unique fingerprint prefix is enough).
func (s *Server) GetCertificate(fingerprint string) (*lxdapi.Certificate, string, error) {
	var cert lxdapi.Certificate
	etag, err := s.queryStruct(http.MethodGet, path("certificates", fingerprint), nil, "", &cert)
	if err != nil {
		return nil, "", err
	}

	return &cert, etag, nil
}

// CreateCertificate adds a certificate to the trust store, or, from an untrusted client,
// redeems a trust token (TrustToken) for the client's own TLS certificate.
func (s *Server) CreateCertificate(req lxdapi.CertificatesPost) error {
	_, err := s.queryStruct(http.MethodPost, path("certificates"), req, "", nil)
	return err
}

// CreateCertificateToken asks for a single-use trust token for a new client.
func (s *Server) CreateCertificateToken(name string, certType string) (*api.CertificateToken, error) {
	var token api.CertificateToken
	_, err := s.queryStruct(http.MethodPost, path("certificates"), lxdapi.CertificatesPost{Name: name, Type: certType, Token: true}, "", &token)
	if err != nil {
		return nil, err
	}

	return &token, nil
}

// UpdateCertificate changes a certificate's name or type.
func (s *Server) UpdateCertificate(fingerprint string, put lxdapi.CertificatePut, etag string) error {
	_, err := s.queryStruct(http.MethodPut, path("certificates", fingerprint), put, etag, nil)
	return err
}

// DeleteCertificate removes a certificate and the deployment keys bound to it.
func (s *Server) DeleteCertificate(fingerprint string) error {
	_, err := s.queryStruct(http.MethodDelete, path("certificates", fingerprint), nil, "", nil)
	return err
}
