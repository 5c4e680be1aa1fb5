package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// Identity holds this member's credentials: the cluster certificate (dqlite's TLS
// and the certificate a joining daemon checks against its token) and the member's own key
// pair, which is all another member's HTTPS API accepts from it: recorded with the
// member, it stops working everywhere once the member is removed.
type Identity struct {
	dataDir string

	// mu guards the cluster certificate fields, which a rotation replaces.
	mu          sync.RWMutex
	pair        tls.Certificate
	leaf        *x509.Certificate
	certPEM     []byte
	keyPEM      []byte
	fingerprint string

	// accepted are the cluster certificates dqlite accepts from peers: the current one,
	// and during a rotation the one before it.
	accepted []*x509.Certificate

	member            tls.Certificate
	memberPEM         []byte
	memberFingerprint string
}

// LoadIdentity reads cluster.crt and cluster.key from the data directory, and the
// member's own member.crt and member.key (made on the first start).
func LoadIdentity(dataDir string) (*Identity, error) {
	certPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.crt"))
	if err != nil {
		return nil, fmt.Errorf("read cluster certificate: %w", err)
	}

	keyPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.key"))
	if err != nil {
		return nil, fmt.Errorf("read cluster key: %w", err)
	}

	c := &Identity{dataDir: dataDir}
	err = c.setCluster(certPEM, keyPEM, nil)
	if err != nil {
		return nil, err
	}

	// Mid-rotation, the peers may present a newer certificate already.
	err = c.loadAccepted()
	if err != nil {
		return nil, err
	}

	c.member, c.memberPEM, c.memberFingerprint, err = memberCertificate(dataDir)
	if err != nil {
		return nil, err
	}

	return c, nil
}

// setCluster makes certPEM/keyPEM the cluster certificate presented, accepting also the
// certificates of also (PEM) from peers.
func (c *Identity) setCluster(certPEM []byte, keyPEM []byte, also [][]byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("load cluster certificate: %w", err)
	}

	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("parse cluster certificate: %w", err)
	}

	accepted := []*x509.Certificate{leaf}
	for _, p := range also {
		cert, err := auth.ParsePEMCertificate(string(p))
		if err != nil {
			return err
		}

		if !cert.Equal(leaf) {
			accepted = append(accepted, cert)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.pair, c.leaf, c.certPEM, c.keyPEM, c.fingerprint, c.accepted = pair, leaf, certPEM, keyPEM, auth.Fingerprint(leaf), accepted
	return nil
}

// ClusterCertificate is the cluster certificate to present (db.ClusterCredentials).
func (c *Identity) ClusterCertificate() *tls.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pair := c.pair
	return &pair
}

// AcceptedClusterCertificates are the cluster certificates accepted from peers
// (db.ClusterCredentials).
func (c *Identity) AcceptedClusterCertificates() []*x509.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.accepted
}

// PEM returns the current cluster key pair and its fingerprint.
func (c *Identity) PEM() (certPEM []byte, keyPEM []byte, fingerprint string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.certPEM, c.keyPEM, c.fingerprint
}

// MemberServerName is the name a member asks for to get another member's own
// certificate; clusterName gets the cluster certificate (joining daemons check it).
const MemberServerName = "lxd-deployd-member"

// ServerCertificate serves the cluster certificate to daemons joining with a token, the
// member's own certificate to other members, and everyone else the daemon's certificate,
// so that clients that pinned it keep working.
func (c *Identity) ServerCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	switch {
	case c == nil:
		return nil, nil
	case hello.ServerName == clusterName:
		return c.ClusterCertificate(), nil
	case hello.ServerName == MemberServerName:
		return &c.member, nil
	}

	return nil, nil // the listener's own certificate
}

// memberTLS is the TLS configuration to call another member whose own certificate has the
// fingerprint recorded with it: this member presents its own certificate, and accepts
// only that one, so that neither a removed member nor a holder of the cluster key can
// stand in for a member.
func (c *Identity) memberTLS(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		ServerName:   MemberServerName,
		Certificates: []tls.Certificate{c.member},
		// The certificates are self-signed: the recorded fingerprint replaces the CA check.
		InsecureSkipVerify: true,
		VerifyConnection: func(state tls.ConnectionState) error {
			if fingerprint == "" || len(state.PeerCertificates) == 0 || auth.Fingerprint(state.PeerCertificates[0]) != fingerprint {
				return errors.New("the member does not present the certificate recorded for it")
			}

			return nil
		},
	}
}

// memberClient returns an HTTP client that talks to the member whose own certificate has
// this fingerprint.
func (c *Identity) memberClient(fingerprint string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: c.memberTLS(fingerprint)}}
}
