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
	"time"

	"github.com/canonical/lxd/shared"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// clusterIdentity is the key pair every member holds: it encrypts dqlite traffic, members
// present it to each other over HTTPS (selected by the clusterName SNI), and a join token
// carries its fingerprint.
type clusterIdentity struct {
	pair        tls.Certificate
	leaf        *x509.Certificate
	certPEM     []byte
	keyPEM      []byte
	fingerprint string
}

// loadClusterIdentity reads cluster.crt and cluster.key from the data directory.
func loadClusterIdentity(dataDir string) (*clusterIdentity, error) {
	certPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.crt"))
	if err != nil {
		return nil, fmt.Errorf("read cluster certificate: %w", err)
	}

	keyPEM, err := os.ReadFile(filepath.Join(dataDir, "cluster.key"))
	if err != nil {
		return nil, fmt.Errorf("read cluster key: %w", err)
	}

	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load cluster certificate: %w", err)
	}

	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse cluster certificate: %w", err)
	}

	return &clusterIdentity{pair: pair, leaf: leaf, certPEM: certPEM, keyPEM: keyPEM, fingerprint: auth.Fingerprint(leaf)}, nil
}

// serverCertificate serves the cluster certificate to callers that ask for the cluster's
// name (members, and daemons joining with a token); everyone else gets the member's own
// certificate, so clients that pinned it keep working.
func (c *clusterIdentity) serverCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c == nil || hello.ServerName != clusterName {
		return nil, nil // the listener's own certificate
	}

	return &c.pair, nil
}

// isMember reports whether a TLS peer is another member: it presented the cluster
// certificate itself (not merely a chain containing it). A client certificate never is.
func (c *clusterIdentity) isMember(peers []*x509.Certificate, now time.Time) bool {
	if c == nil || len(peers) == 0 {
		return false
	}

	peer := peers[0]
	return peer.Equal(c.leaf) && !now.Before(peer.NotBefore) && !now.After(peer.NotAfter)
}

// memberClient returns an HTTP client that talks to other members: it presents the
// cluster certificate and accepts only a server presenting it too.
func (c *clusterIdentity) memberClient(timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(c.leaf)
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				MinVersion:   tls.VersionTLS13,
				ServerName:   clusterName,
				RootCAs:      pool,
				Certificates: []tls.Certificate{c.pair},
			},
		},
	}
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

	var errs []error
	for _, address := range token.Addresses {
		joined, err := fetchClusterIdentity(ctx, address, token.Fingerprint, api.ClusterJoinPost{ServerName: token.ServerName, Secret: token.Secret})
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
func fetchClusterIdentity(ctx context.Context, address string, fingerprint string, req api.ClusterJoinPost) (*api.ClusterJoinResponse, error) {
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS13,
				ServerName: clusterName,
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
