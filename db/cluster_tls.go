package db

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// ClusterCredentials supplies the cluster certificate that dqlite presents to the other
// members and the ones it accepts from them. Both are read at every handshake, so that a
// rotation (lxd-deploy cluster update-certificate) takes effect without a restart: while
// members move over, the old and the new certificate are both accepted; once every member
// presents the new one, the old one is retired and refused.
type ClusterCredentials interface {
	// ClusterCertificate is the key pair to present.
	ClusterCertificate() *tls.Certificate

	// AcceptedClusterCertificates are the certificates a peer may present.
	AcceptedClusterCertificates() []*x509.Certificate
}

// rotatingTLS builds dqlite's listen and dial TLS configurations over creds. go-dqlite's
// proxy takes a configuration with ClientCAs set for the listening side, so that field is
// set (to an empty pool: trust is checked against creds, not a CA).
func rotatingTLS(creds ClusterCredentials) (*tls.Config, *tls.Config) {
	verify := func(state tls.ConnectionState) error {
		if len(state.PeerCertificates) == 0 {
			return errors.New("the peer presented no cluster certificate")
		}

		peer := state.PeerCertificates[0]
		for _, accepted := range creds.AcceptedClusterCertificates() {
			if peer.Equal(accepted) {
				return nil
			}
		}

		return errors.New("the peer's cluster certificate is not (or no longer) accepted")
	}

	listen := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return creds.ClusterCertificate(), nil
		},
		ClientAuth:       tls.RequireAnyClientCert,
		ClientCAs:        x509.NewCertPool(),
		VerifyConnection: verify,
		// Every connection shows its certificate again: a resumed session would skip the
		// check of a certificate retired since.
		SessionTicketsDisabled: true,
	}

	dial := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return creds.ClusterCertificate(), nil
		},
		// The certificates are self-signed and compared whole in VerifyConnection.
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
	}

	return listen, dial
}
