package auth

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// CheckCertificateValidity refuses a trust store entry whose certificate is outside its
// validity dates, as the TLS path refuses its peer (AuthenticateTLS): what acts as an
// entry without its TLS handshake (a web session, a sign-in link) must not outlive it.
func CheckCertificateValidity(name string, certPEM string, now time.Time) error {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		return lxdapi.StatusErrorf(http.StatusForbidden, "trust store entry %q holds no PEM certificate: add its certificate again (lxd-deploy config trust add)", name)
	}

	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return lxdapi.StatusErrorf(http.StatusForbidden, "trust store entry %q holds no valid certificate (%v): add its certificate again (lxd-deploy config trust add)", name, err)
	}

	if now.Before(cert.NotBefore) {
		return lxdapi.StatusErrorf(http.StatusForbidden, "certificate %q is not valid before %s: wait, or use a current certificate", name, cert.NotBefore.UTC().Format(time.RFC3339))
	}

	if now.After(cert.NotAfter) {
		return lxdapi.StatusErrorf(http.StatusForbidden, "certificate %q expired on %s: trust a new certificate (lxd-deploy config trust add) and make a link for it", name, cert.NotAfter.UTC().Format(time.RFC3339))
	}

	return nil
}
