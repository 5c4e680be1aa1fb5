package ui

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Caps of sign-in links per trust store entry (doc/ui.md): each link is a database row
// kept up to a day, and each one redeemed a session of 12 hours.
const (
	// MaxOpenLinks is how many links of one entry may wait to be used at once.
	MaxOpenLinks = 5

	// MaxLinksPerHour is how many links may be made for one entry in an hour, used or not.
	MaxLinksPerHour = 20
)

// LocalIdentityName names the trust store entry the daemon makes for links asked over
// the unix socket without --certificate: a client certificate whose key the daemon throws
// away, so it acts only through sessions. It is listed and revocable like any other entry;
// the next such link after its removal makes a new one.
const LocalIdentityName = "lxd-deployd-web-local"

// checkLinkTarget refuses a link for a trust store entry whose sessions could do nothing,
// or that has enough links already. It runs in the transaction that records the link, so
// the caps hold across members and concurrent requests.
func checkLinkTarget(ctx context.Context, tx *sql.Tx, cert db.Certificate, now time.Time) error {
	switch cert.Type {
	case api.CertificateTypeClient:
	case api.CertificateTypeDeployments:
		keys, err := db.CountCertificateKeys(ctx, tx, cert.ID)
		if err != nil {
			return err
		}

		if keys == 0 {
			return lxdapi.StatusErrorf(http.StatusConflict, "certificate %q holds no deployment key, so a session of it could see nothing: create a key for it first (lxd-deploy deployment key create)", cert.Name)
		}
	default:
		return lxdapi.StatusErrorf(http.StatusBadRequest, "certificate %q is of type %s, which the web view cannot use: make the link for a client or deployments certificate", cert.Name, cert.Type)
	}

	err := auth.CheckCertificateValidity(cert.Name, cert.Certificate, now)
	if err != nil {
		return err
	}

	open, made, err := db.CountUILinks(ctx, tx, cert.Fingerprint, now, now.Add(-db.UILinkHistory))
	if err != nil {
		return err
	}

	if open >= MaxOpenLinks {
		return lxdapi.StatusErrorf(http.StatusTooManyRequests, "certificate %q has %d unused sign-in links (at most %d): use them or wait until they expire (a shorter --expiry helps) before making more", cert.Name, open, MaxOpenLinks)
	}

	if made >= MaxLinksPerHour {
		return lxdapi.StatusErrorf(http.StatusTooManyRequests, "%d sign-in links were made for certificate %q in the last hour (at most %d): try again later", made, cert.Name, MaxLinksPerHour)
	}

	return nil
}

// certificateByFingerprint reads the trust store entry with exactly this fingerprint, or
// sql.ErrNoRows.
func certificateByFingerprint(ctx context.Context, tx *sql.Tx, fingerprint string) (*db.Certificate, error) {
	certs, err := db.GetCertificates(ctx, tx)
	if err != nil {
		return nil, err
	}

	for _, c := range certs {
		if c.Fingerprint == fingerprint {
			return &c, nil
		}
	}

	return nil, sql.ErrNoRows
}

// localIdentity returns the fingerprint of the daemon's own entry for links made over the
// unix socket (LocalIdentityName), making it when there is none that is currently valid.
func localIdentity(ctx context.Context, tx *sql.Tx, now time.Time) (string, error) {
	certs, err := db.GetCertificates(ctx, tx)
	if err != nil {
		return "", err
	}

	for _, c := range certs {
		if c.Name == LocalIdentityName && c.Type == api.CertificateTypeClient && auth.CheckCertificateValidity(c.Name, c.Certificate, now) == nil {
			return c.Fingerprint, nil
		}
	}

	certPEM, cert, err := newLocalCertificate(now)
	if err != nil {
		return "", fmt.Errorf("make the web view's local identity: %w", err)
	}

	fingerprint := auth.Fingerprint(cert)
	_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeClient, Name: LocalIdentityName, Certificate: certPEM})
	if err != nil {
		return "", err
	}

	return fingerprint, nil
}

// newLocalCertificate makes the local identity's certificate: ECDSA P-384 as LXD's client
// certificates, valid ten years from a day before now (members' clocks differ a little).
// Nobody gets the key: the entry acts only through sessions.
func newLocalCertificate(now time.Time) (string, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return "", nil, err
	}

	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return "", nil, err
	}

	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"lxd-deployd"}, CommonName: LocalIdentityName},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}

	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return "", nil, err
	}

	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", nil, err
	}

	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), cert, nil
}
