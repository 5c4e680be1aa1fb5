package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"time"
)

// TrustedCertificate is what authentication needs to know of a trust store entry.
type TrustedCertificate struct {
	Fingerprint string
	Type        string
	Name        string
}

// Fingerprint returns the SHA-256 fingerprint of a certificate's DER, as LXD prints it.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// ParsePEMCertificate parses a trust store entry's PEM.
func ParsePEMCertificate(data string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(data))
	if block == nil {
		return nil, errors.New("stored certificate is not valid PEM")
	}

	return x509.ParseCertificate(block.Bytes)
}

// HashSecret is how the secrets of trust and join tokens are stored: only a hash, which
// the secret a caller presents is hashed to and looked up by.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// AuthenticateTLS matches the peer certificate of a TLS connection against the trust
// store. The TLS stack does not verify client certificates (they are self-signed, as with
// LXD); trust comes from the fingerprint alone, compared in constant time, and only while
// the certificate is within its validity dates. Only the first certificate counts: the
// handshake proves possession of its key alone, and anyone can append a trusted
// certificate they do not hold to their chain. An unknown peer gets an untrusted caller.
func AuthenticateTLS(peers []*x509.Certificate, trusted []TrustedCertificate, now time.Time) *Caller {
	if len(peers) > 0 {
		peer := peers[0]
		if now.Before(peer.NotBefore) || now.After(peer.NotAfter) {
			return &Caller{Protocol: ProtocolTLS}
		}

		fingerprint := []byte(Fingerprint(peer))
		var match *TrustedCertificate
		for i := range trusted {
			// Every entry is compared, so the time taken does not tell how close a guess was.
			if subtle.ConstantTimeCompare(fingerprint, []byte(trusted[i].Fingerprint)) == 1 {
				match = &trusted[i]
			}
		}

		if match != nil {
			return &Caller{
				Protocol:        ProtocolTLS,
				Trusted:         true,
				Fingerprint:     match.Fingerprint,
				CertificateType: match.Type,
				Name:            match.Name,
			}
		}
	}

	return &Caller{Protocol: ProtocolTLS}
}
