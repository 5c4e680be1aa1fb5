package trust

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/canonical/lxd/shared"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// wantErr checks err against a status (0: no error) and a part of its text.
func wantErr(t *testing.T, what string, err error, status int, text string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}

		return
	}

	if !lxdapi.StatusErrorCheck(err, status) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v, want a %d saying %q", what, err, status, text)
	}
}

// newCert makes a client certificate, parsed and as PEM.
func newCert(t *testing.T) (*x509.Certificate, string) {
	t.Helper()
	certPEM, _, err := shared.GenerateMemCert(true, shared.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cert, err := auth.ParsePEMCertificate(string(certPEM))
	if err != nil {
		t.Fatal(err)
	}

	return cert, string(certPEM)
}

// TestParseCertificate: PEM, base64 DER as LXD sends it, and base64 of a PEM file.
func TestParseCertificate(t *testing.T) {
	cert, certPEM := newCert(t)
	for name, field := range map[string]string{
		"PEM":           certPEM,
		"base64 DER":    base64.StdEncoding.EncodeToString(cert.Raw),
		"base64 of PEM": " " + base64.StdEncoding.EncodeToString([]byte(certPEM)) + "\n",
	} {
		parsed, err := ParseCertificate(field)
		if err != nil || !parsed.Equal(cert) {
			t.Errorf("%s: %v", name, err)
		}
	}

	_, err := ParseCertificate("not base64!")
	wantErr(t, "garbage", err, http.StatusBadRequest, "PEM or base64-encoded DER")
	_, err = ParseCertificate(base64.StdEncoding.EncodeToString([]byte("no certificate")))
	wantErr(t, "not X.509", err, http.StatusBadRequest, "not a valid X.509 certificate")
	if EncodePEM(cert) != certPEM {
		t.Error("EncodePEM does not give back the certificate's PEM")
	}
}

// TestCertificates: an admin adds certificates (type client by default) and makes trust
// tokens; an untrusted caller redeems a token once; names and types change, the
// certificate itself does not; restricted certificates are refused.
func TestCertificates(t *testing.T) {
	store := Certificates{DB: dbtest.Open(t), ServerFingerprint: "f00", Addresses: func() []string { return []string{"192.0.2.1:8443"} }}
	ctx := context.Background()
	alice, alicePEM := newCert(t)
	bob, _ := newCert(t)

	_, _, err := store.Create(ctx, lxdapi.CertificatesPost{Type: "root"}, nil)
	wantErr(t, "a bad type", err, 400, "")
	_, _, err = store.Create(ctx, lxdapi.CertificatesPost{Restricted: true}, nil)
	wantErr(t, "restricted", err, 400, "restricted certificates are not supported")
	_, _, err = store.Create(ctx, lxdapi.CertificatesPost{}, nil)
	wantErr(t, "no certificate", err, 400, "certificate is required")
	_, _, err = store.Create(ctx, lxdapi.CertificatesPost{Token: true}, nil)
	wantErr(t, "a nameless token", err, 400, "a name is required for a trust token")

	token, fingerprint, err := store.Create(ctx, lxdapi.CertificatesPost{Certificate: alicePEM}, []*x509.Certificate{bob})
	if err != nil || token != nil || fingerprint != auth.Fingerprint(alice) {
		t.Fatalf("adding alice: %v %v %q", token, err, fingerprint)
	}

	added, err := store.Get(ctx, fingerprint)
	if err != nil || added.Type != api.CertificateTypeClient || added.Name != alice.Subject.CommonName || added.Certificate != alicePEM {
		t.Fatalf("alice's entry %+v: %v", added, err)
	}

	token, _, err = store.Create(ctx, lxdapi.CertificatesPost{Name: "bob", Type: api.CertificateTypeMetrics, Token: true}, nil)
	if err != nil || token.ClientName != "bob" || token.Fingerprint != "f00" || len(token.Addresses) != 1 || len(token.Secret) != 64 || token.Token == "" {
		t.Fatalf("bob's token %+v: %v", token, err)
	}

	stranger := &auth.Caller{Protocol: auth.ProtocolTLS}
	_, err = store.Redeem(ctx, &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeDeployments}, lxdapi.CertificatesPost{TrustToken: token.Secret}, []*x509.Certificate{bob})
	wantErr(t, "a trusted caller redeeming", err, 403, "only admins may add certificates")
	_, err = store.Redeem(ctx, stranger, lxdapi.CertificatesPost{}, []*x509.Certificate{bob})
	wantErr(t, "no token", err, 403, "present a trust token")
	_, err = store.Redeem(ctx, stranger, lxdapi.CertificatesPost{TrustToken: token.Secret}, nil)
	wantErr(t, "no TLS certificate", err, 403, "needs a TLS client certificate")

	// The whole encoded token is accepted as well as its secret.
	fingerprint, err = store.Redeem(ctx, stranger, lxdapi.CertificatesPost{TrustToken: token.Token}, []*x509.Certificate{bob})
	if err != nil || fingerprint != auth.Fingerprint(bob) {
		t.Fatalf("redeeming bob's token: %v", err)
	}

	redeemed, err := store.Get(ctx, fingerprint)
	if err != nil || redeemed.Name != "bob" || redeemed.Type != api.CertificateTypeMetrics {
		t.Fatalf("bob's entry %+v: %v", redeemed, err)
	}

	_, err = store.Redeem(ctx, stranger, lxdapi.CertificatesPost{Password: token.Secret}, []*x509.Certificate{alice})
	wantErr(t, "a spent token", err, 403, "already used")

	rename := func(put lxdapi.CertificatePut) func(lxdapi.CertificatePut) (lxdapi.CertificatePut, error) {
		return func(current lxdapi.CertificatePut) (lxdapi.CertificatePut, error) {
			if current.Name != "bob" || current.Certificate == "" {
				t.Errorf("the current fields handed to decode: %+v", current)
			}

			return put, nil
		}
	}

	wantErr(t, "restricting", store.Update(ctx, fingerprint, rename(lxdapi.CertificatePut{Name: "b", Type: api.CertificateTypeClient, Projects: []string{"p"}})), 400, "restricted certificates are not supported")
	wantErr(t, "another certificate", store.Update(ctx, fingerprint, rename(lxdapi.CertificatePut{Name: "b", Type: api.CertificateTypeClient, Certificate: alicePEM})), 400, "the certificate itself cannot be changed")
	wantErr(t, "no name", store.Update(ctx, fingerprint, rename(lxdapi.CertificatePut{Type: api.CertificateTypeClient})), 400, "name must not be empty")
	wantErr(t, "a bad type", store.Update(ctx, fingerprint, rename(lxdapi.CertificatePut{Name: "b", Type: "root"})), 400, "")
	wantErr(t, "renaming", store.Update(ctx, fingerprint, rename(lxdapi.CertificatePut{Name: "robert", Type: api.CertificateTypeClient, Certificate: redeemed.Certificate})), 0, "")
	changed, err := store.Get(ctx, fingerprint)
	if err != nil || changed.Name != "robert" || changed.Type != api.CertificateTypeClient {
		t.Fatalf("bob's changed entry %+v: %v", changed, err)
	}

	wantErr(t, "delete", store.Delete(ctx, fingerprint), 0, "")
	wantErr(t, "delete again", store.Delete(ctx, fingerprint), 404, "")
	certs, err := store.List(ctx)
	if err != nil || len(certs) != 1 || certs[0].Name != alice.Subject.CommonName {
		t.Fatalf("the trust store after deleting bob: %+v %v", certs, err)
	}
}
