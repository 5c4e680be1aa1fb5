package cluster

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Members returns every member with its database role and whether it is online.
func (m *Member) Members(ctx context.Context) ([]api.ClusterMember, error) {
	var rows []db.Member
	err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetMembers(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}

	nodes, err := m.nodes.Nodes(ctx)
	if err != nil {
		return nil, err
	}

	now := time.Now()
	members := make([]api.ClusterMember, 0, len(rows))
	for _, row := range rows {
		member := api.ClusterMember{ServerName: row.Name, DatabaseAddress: row.DatabaseAddress, DatabaseRole: "none", Status: "Offline", LastHeartbeat: row.HeartbeatAt}
		address, _, _ := strings.Cut(row.Address, ",")
		if address != "" {
			member.URL = "https://" + address
		}

		for _, node := range nodes {
			if node.Address == row.DatabaseAddress {
				member.DatabaseRole = node.Role
				member.DatabaseLeader = node.Leader
			}
		}

		if now.Sub(row.HeartbeatAt) < OfflineAfter {
			member.Status = "Online"
		}

		members = append(members, member)
	}

	return members, nil
}

// Pending returns the members yet to join: the outstanding join tokens.
func (m *Member) Pending(ctx context.Context) ([]api.ClusterMember, error) {
	var tokens []db.JoinToken
	err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		tokens, err = db.GetJoinTokens(ctx, tx, time.Now())
		return err
	})
	if err != nil {
		return nil, err
	}

	pending := make([]api.ClusterMember, 0, len(tokens))
	for _, t := range tokens {
		member := api.ClusterMember{ServerName: t.Name, Status: "Pending", DatabaseRole: "none", ExpiresAt: &t.ExpiresAt}
		if t.CertificateFingerprint != "" {
			member.Status = "Joining" // redeemed by a daemon that has not registered yet
		}

		pending = append(pending, member)
	}

	return pending, nil
}

// Get returns the member called name, or the pending member (join token) of that name.
func (m *Member) Get(ctx context.Context, name string) (*api.ClusterMember, error) {
	members, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}

	for _, member := range members {
		if member.ServerName == name {
			return &member, nil
		}
	}

	pending, err := m.Pending(ctx)
	if err != nil {
		return nil, err
	}

	for _, member := range pending {
		if member.ServerName == name {
			return &member, nil
		}
	}

	return nil, lxdapi.StatusErrorf(http.StatusNotFound, "cluster member %q not found: `lxd-deploy cluster list` shows the members, `lxd-deploy cluster list-tokens` the pending ones", name)
}

// The answers of what needs cluster credentials on a daemon without them (Clustered):
// handlers check first, before they read the request, as the package's methods do.
var (
	// ErrNoJoinTokens answers a request for a join token.
	ErrNoJoinTokens = lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered: restart it with --cluster-address to let others join")

	// ErrNotClustered answers a daemon trying to join.
	ErrNotClustered = lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered")

	// ErrNothingToRotate answers a rotation of the cluster certificate.
	ErrNothingToRotate = lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered: it has no cluster certificate to rotate")
)

// CreateJoinToken issues a single-use join token for a new member called name (checked by
// the caller), in LXD's format: base64 JSON with the name, the cluster certificate's
// fingerprint, the members' HTTPS addresses and a secret of which only a hash is stored.
func (m *Member) CreateJoinToken(ctx context.Context, name string) (*api.ClusterJoinToken, error) {
	if m.identity == nil {
		return nil, ErrNoJoinTokens
	}

	members, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}

	addresses := []string{}
	for _, member := range members {
		if member.Status == "Online" && member.URL != "" {
			addresses = append(addresses, strings.TrimPrefix(member.URL, "https://"))
		}
	}

	if len(addresses) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusConflict, "no member serves HTTPS, which joining needs: start members with --https-address")
	}

	secretBytes := make([]byte, 32)
	_, err = rand.Read(secretBytes)
	if err != nil {
		return nil, err
	}

	secret := hex.EncodeToString(secretBytes)
	now := time.Now()
	expiresAt := now.Add(m.tokenExpiry).UTC()
	err = m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.CreateJoinToken(ctx, tx, db.JoinToken{Name: name, SecretHash: auth.HashSecret(secret), ExpiresAt: expiresAt}, now)
	})
	if err != nil {
		return nil, err
	}

	_, _, fingerprint := m.identity.PEM()
	token := lxdapi.ClusterMemberJoinToken{ServerName: name, Fingerprint: fingerprint, Addresses: addresses, Secret: secret, ExpiresAt: expiresAt}
	return &api.ClusterJoinToken{ClusterMemberJoinToken: token, Token: token.String()}, nil
}

// Redeem redeems a join token: the new member gets the cluster key pair and the database
// addresses to join. It reaches here over TLS, having checked that this member presents
// the cluster certificate whose fingerprint the token carries; peers are the certificates
// it presented.
func (m *Member) Redeem(ctx context.Context, req api.ClusterJoinPost, peers []*x509.Certificate) (*api.ClusterJoinResponse, error) {
	if m.identity == nil {
		return nil, ErrNotClustered
	}

	if req.Secret == "" {
		return nil, lxdapi.StatusErrorf(http.StatusForbidden, "joining needs the secret of a join token")
	}

	// The joining daemon presents its own member certificate: the token is bound to it
	// until the member joins. One without a certificate can redeem the token once.
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	claimant := "anonymous:" + hex.EncodeToString(nonce)
	if len(peers) > 0 {
		claimant = auth.Fingerprint(peers[0])
	}

	var databaseAddresses []string
	err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		token, err := db.ClaimJoinToken(ctx, tx, auth.HashSecret(req.Secret), claimant, time.Now())
		if err != nil {
			return err
		}

		if token.Name != req.ServerName {
			return lxdapi.StatusErrorf(http.StatusForbidden, "join token was issued for member %q, not %q", token.Name, req.ServerName)
		}

		members, err := db.GetMembers(ctx, tx)
		for _, member := range members {
			databaseAddresses = append(databaseAddresses, member.DatabaseAddress)
		}

		return err
	})
	if err != nil {
		return nil, err
	}

	certPEM, keyPEM, _ := m.identity.PEM()
	return &api.ClusterJoinResponse{
		ClusterCertificate: string(certPEM),
		ClusterKey:         string(keyPEM),
		DatabaseAddresses:  databaseAddresses,
	}, nil
}

// onlineDatabaseAddresses are the database addresses of the members heard from lately.
func (m *Member) onlineDatabaseAddresses(ctx context.Context) (map[string]bool, error) {
	online := map[string]bool{}
	err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		members, err := db.GetMembers(ctx, tx)
		for _, member := range members {
			if time.Since(member.HeartbeatAt) < OfflineAfter {
				online[member.DatabaseAddress] = true
			}
		}

		return err
	})
	return online, err
}

// Remove removes the member called name from the cluster, or revokes the join token of a
// member yet to join. An online member is removed cleanly: its database role goes to
// another member first. An offline one needs force, since it might only be unreachable
// for a while. This member cannot remove itself, and the last database voter cannot be
// removed.
func (m *Member) Remove(ctx context.Context, name string, force bool) error {
	if name == m.name {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "member %q cannot remove itself: run the removal against another member, or stop it with SIGTERM", name)
	}

	var member *db.Member
	err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		member, err = db.GetMember(ctx, tx, name)
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			// Not a member: maybe one yet to join, whose token this revokes.
			member = nil
			return db.DeleteJoinToken(ctx, tx, name)
		}

		return err
	})
	if err != nil {
		return err
	}

	if member == nil {
		return nil // a pending member: its join token is revoked
	}

	online := time.Since(member.HeartbeatAt) < OfflineAfter
	if !online && !force {
		return lxdapi.StatusErrorf(http.StatusConflict, "member %q is offline (last heartbeat %s): remove it with --force if it is not coming back", name, member.HeartbeatAt.Format(time.RFC3339))
	}

	live, err := m.onlineDatabaseAddresses(ctx)
	if err != nil {
		return err
	}

	err = m.nodes.RemoveNode(ctx, member.DatabaseAddress, live)
	if err != nil {
		return err
	}

	return m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteMember(ctx, tx, name)
	})
}

// RevokeToken revokes the join token of the member yet to join called name. A daemon that
// redeemed the token and has not joined can no longer join with it; the cluster
// certificate it was given stays valid until the next rotation (Rotate).
func (m *Member) RevokeToken(ctx context.Context, name string) error {
	return m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteJoinToken(ctx, tx, name)
	})
}
