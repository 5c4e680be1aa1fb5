package cluster

import (
	"context"
	"crypto/tls"
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

// JoinRequest is what a daemon started with --cluster-join-token joins with.
type JoinRequest struct {
	DataDir        string // the daemon's data directory
	Token          string // --cluster-join-token
	ClusterAddress string // --cluster-address
	Name           string // --cluster-name, if given
}

// Joined is what joining with a token gives: the member's name (the token's) and the
// database addresses to join.
type Joined struct {
	Name              string
	DatabaseAddresses []string
}

// Prepare checks the cluster flags (the join token expiry, and the member's name when
// given) and, on a first start with a join token, joins (JoinWithToken): the token then
// names the member and the database addresses to join.
func Prepare(ctx context.Context, req JoinRequest, tokenExpiry time.Duration) (*Joined, error) {
	if tokenExpiry <= 0 {
		return nil, fmt.Errorf("--cluster-join-token-expiry must be positive, got %s", tokenExpiry)
	}

	if req.Name != "" {
		err := validate.Name("cluster member", req.Name)
		if err != nil {
			return nil, fmt.Errorf("--cluster-name: %w", err)
		}
	}

	return JoinWithToken(ctx, req)
}

// JoinWithToken prepares the first start of a member given --cluster-join-token: it asks
// a member listed in the token for the cluster key pair, over TLS checked against the
// token's fingerprint and authenticated by its secret, writes the pair into the data
// directory and returns the database addresses to join and the member's name. Later
// starts (the database exists) ignore the token, which is spent: nil, as without a token.
func JoinWithToken(ctx context.Context, req JoinRequest) (*Joined, error) {
	if req.Token == "" {
		return nil, nil
	}

	_, err := os.Stat(filepath.Join(req.DataDir, "database", "info.yaml"))
	if err == nil {
		return nil, nil // joined on an earlier start
	}

	if req.ClusterAddress == "" {
		return nil, errors.New("joining a cluster needs --cluster-address: the host:port this member's database listens on")
	}

	token, err := shared.JoinTokenDecode(strings.TrimSpace(req.Token))
	if err != nil {
		return nil, fmt.Errorf("join token is not valid (%v): copy the whole token `lxd-deploy cluster add` printed", err)
	}

	if req.Name != "" && req.Name != token.ServerName {
		return nil, fmt.Errorf("the join token is for member %q but --cluster-name says %q: drop --cluster-name or ask for a token with that name", token.ServerName, req.Name)
	}

	if time.Now().After(token.ExpiresAt) {
		return nil, fmt.Errorf("join token expired at %s: run `lxd-deploy cluster add %s` on a member for a new one", token.ExpiresAt.Format(time.RFC3339), token.ServerName)
	}

	// The member's own certificate redeems the token: only this daemon may redeem it
	// again should the join fail half way, and the token is spent once it has joined.
	member, _, _, err := memberCertificate(req.DataDir)
	if err != nil {
		return nil, err
	}

	var errs []error
	for _, address := range token.Addresses {
		joined, err := fetchClusterIdentity(ctx, address, token.Fingerprint, member, api.ClusterJoinPost{ServerName: token.ServerName, Secret: token.Secret})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", address, err))
			continue
		}

		err = os.WriteFile(filepath.Join(req.DataDir, "cluster.key"), []byte(joined.ClusterKey), 0o600)
		if err != nil {
			return nil, fmt.Errorf("write cluster key: %w", err)
		}

		err = os.WriteFile(filepath.Join(req.DataDir, "cluster.crt"), []byte(joined.ClusterCertificate), 0o644)
		if err != nil {
			return nil, fmt.Errorf("write cluster certificate: %w", err)
		}

		return &Joined{Name: token.ServerName, DatabaseAddresses: joined.DatabaseAddresses}, nil
	}

	return nil, fmt.Errorf("no member in the join token let this daemon join: %w", errors.Join(errs...))
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
