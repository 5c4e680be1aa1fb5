package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/canonical/lxd/shared"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// clusterIdentity holds this member's credentials: the cluster certificate (dqlite's TLS
// and the certificate a joining daemon checks against its token) and the member's own key
// pair, which is all another member's HTTPS API accepts from it: recorded with the
// member, it stops working everywhere once the member is removed.
type clusterIdentity struct {
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

// loadClusterIdentity reads cluster.crt and cluster.key from the data directory, and the
// member's own member.crt and member.key (made on the first start).
func loadClusterIdentity(dataDir string) (*clusterIdentity, error) {
	certPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.crt"))
	if err != nil {
		return nil, fmt.Errorf("read cluster certificate: %w", err)
	}

	keyPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.key"))
	if err != nil {
		return nil, fmt.Errorf("read cluster key: %w", err)
	}

	c := &clusterIdentity{dataDir: dataDir}
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
func (c *clusterIdentity) setCluster(certPEM []byte, keyPEM []byte, also [][]byte) error {
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
		cert, err := parsePEMCertificate(string(p))
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
func (c *clusterIdentity) ClusterCertificate() *tls.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pair := c.pair
	return &pair
}

// AcceptedClusterCertificates are the cluster certificates accepted from peers
// (db.ClusterCredentials).
func (c *clusterIdentity) AcceptedClusterCertificates() []*x509.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.accepted
}

// clusterPEM returns the current cluster key pair and its fingerprint.
func (c *clusterIdentity) clusterPEM() (certPEM []byte, keyPEM []byte, fingerprint string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.certPEM, c.keyPEM, c.fingerprint
}

// memberServerName is the name a member asks for to get another member's own
// certificate; clusterName gets the cluster certificate (joining daemons check it).
const memberServerName = "lxd-deployd-member"

// serverCertificate serves the cluster certificate to daemons joining with a token, the
// member's own certificate to other members, and everyone else the daemon's certificate,
// so that clients that pinned it keep working.
func (c *clusterIdentity) serverCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	switch {
	case c == nil:
		return nil, nil
	case hello.ServerName == clusterName:
		return c.ClusterCertificate(), nil
	case hello.ServerName == memberServerName:
		return &c.member, nil
	}

	return nil, nil // the listener's own certificate
}

// memberTLS is the TLS configuration to call another member whose own certificate has the
// fingerprint recorded with it: this member presents its own certificate, and accepts
// only that one, so that neither a removed member nor a holder of the cluster key can
// stand in for a member.
func (c *clusterIdentity) memberTLS(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		ServerName:   memberServerName,
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
func (c *clusterIdentity) memberClient(fingerprint string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: c.memberTLS(fingerprint)}}
}

// prepareCluster checks the cluster flags and, on a first start with a join token, joins.
func prepareCluster(ctx context.Context, cfg *config) error {
	if cfg.joinTokenExpiry <= 0 {
		return fmt.Errorf("--cluster-join-token-expiry must be positive, got %s", cfg.joinTokenExpiry)
	}

	if cfg.clusterName != "" {
		err := validate.Name("cluster member", cfg.clusterName)
		if err != nil {
			return fmt.Errorf("--cluster-name: %w", err)
		}
	}

	return joinWithToken(ctx, cfg)
}

// joinWithToken prepares the first start of a member given --cluster-join-token: it asks
// a member listed in the token for the cluster key pair, over TLS checked against the
// token's fingerprint and authenticated by its secret, writes the pair into the data
// directory and sets the database addresses to join and the member's name. Later starts
// (the database exists) ignore the token, which is spent.
func joinWithToken(ctx context.Context, cfg *config) error {
	if cfg.clusterJoinToken == "" {
		return nil
	}

	_, err := os.Stat(filepath.Join(cfg.dataDir, "database", "info.yaml"))
	if err == nil {
		return nil // joined on an earlier start
	}

	if cfg.clusterAddress == "" {
		return errors.New("joining a cluster needs --cluster-address: the host:port this member's database listens on")
	}

	token, err := shared.JoinTokenDecode(strings.TrimSpace(cfg.clusterJoinToken))
	if err != nil {
		return fmt.Errorf("join token is not valid (%v): copy the whole token `lxd-deploy cluster add` printed", err)
	}

	if cfg.clusterName != "" && cfg.clusterName != token.ServerName {
		return fmt.Errorf("the join token is for member %q but --cluster-name says %q: drop --cluster-name or ask for a token with that name", token.ServerName, cfg.clusterName)
	}

	if time.Now().After(token.ExpiresAt) {
		return fmt.Errorf("join token expired at %s: run `lxd-deploy cluster add %s` on a member for a new one", token.ExpiresAt.Format(time.RFC3339), token.ServerName)
	}

	// The member's own certificate redeems the token: only this daemon may redeem it
	// again should the join fail half way, and the token is spent once it has joined.
	member, _, _, err := memberCertificate(cfg.dataDir)
	if err != nil {
		return err
	}

	var errs []error
	for _, address := range token.Addresses {
		joined, err := fetchClusterIdentity(ctx, address, token.Fingerprint, member, api.ClusterJoinPost{ServerName: token.ServerName, Secret: token.Secret})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", address, err))
			continue
		}

		err = os.WriteFile(filepath.Join(cfg.dataDir, "cluster.key"), []byte(joined.ClusterKey), 0o600)
		if err != nil {
			return fmt.Errorf("write cluster key: %w", err)
		}

		err = os.WriteFile(filepath.Join(cfg.dataDir, "cluster.crt"), []byte(joined.ClusterCertificate), 0o644)
		if err != nil {
			return fmt.Errorf("write cluster certificate: %w", err)
		}

		cfg.clusterJoin = joined.DatabaseAddresses
		cfg.clusterName = token.ServerName
		return nil
	}

	return fmt.Errorf("no member in the join token let this daemon join: %w", errors.Join(errs...))
}

// fetchClusterIdentity redeems a join token at one member's HTTPS address.
func fetchClusterIdentity(ctx context.Context, address string, fingerprint string, member tls.Certificate, req api.ClusterJoinPost) (*api.ClusterJoinResponse, error) {
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				MinVersion:   tls.VersionTLS13,
				ServerName:   clusterName,
				Certificates: []tls.Certificate{member},
				// The token names the certificate by fingerprint, as LXD's do: that check
				// replaces the CA check.
				InsecureSkipVerify: true,
				VerifyConnection: func(state tls.ConnectionState) error {
					if len(state.PeerCertificates) == 0 || auth.Fingerprint(state.PeerCertificates[0]) != fingerprint {
						return errors.New("the member does not present the cluster certificate the token names")
					}

					return nil
				},
			},
		},
	}

	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}

	request, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+address+"/1.0/cluster/join", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}

	request.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(request)
	if err != nil {
		return nil, err
	}

	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}

	var envelope struct {
		Error    string                  `json:"error"`
		Metadata api.ClusterJoinResponse `json:"metadata"`
	}

	err = json.Unmarshal(data, &envelope)
	if err != nil {
		return nil, fmt.Errorf("unexpected answer (HTTP %d): %w", resp.StatusCode, err)
	}

	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, envelope.Error)
	}

	return &envelope.Metadata, nil
}
