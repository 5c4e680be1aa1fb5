package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// clusterAPI serves /1.0/cluster: members, join tokens and joining.
type clusterAPI struct {
	db     *db.Cluster
	member string

	// identity is the cluster key pair; nil when the daemon is not clustered.
	identity *clusterIdentity

	// tokenExpiry is how long a join token can be used.
	tokenExpiry time.Duration

	// events are this member's own events, streamed to the other members.
	events *events.Server

	// syncCertificate takes this member one step along a cluster certificate rotation
	// (cluster_rotate.go); nil in tests without one.
	syncCertificate func(ctx context.Context) error
}

// clusterEndpoints are the routes of the cluster API.
func clusterEndpoints(a clusterAPI) []endpoint {
	admin := action{access: allowAdmin}
	// Join tokens and the cluster certificate are credentials (access_credentials.go).
	secretRead := action{access: allowSecretRead}
	credentialWrite := action{access: allowCredentialWrite}
	with := func(base action, h handlerFunc) action {
		base.handler = h
		return base
	}

	return []endpoint{
		{
			path: "/1.0/cluster",
			get:  with(admin, a.get),
		},
		{
			path: "/1.0/cluster/members",
			get:  with(admin, a.listMembers),
			post: with(credentialWrite, a.createJoinToken),
		},
		{
			// A name yet to join is a pending member: GET shows its token, DELETE revokes it.
			path:   "/1.0/cluster/members/{member}",
			get:    with(admin, a.getMember),
			delete: with(admin, a.deleteMember),
		},
		{
			path: "/1.0/cluster/tokens",
			get:  with(secretRead, a.listTokens),
		},
		{
			path:   "/1.0/cluster/tokens/{member}",
			get:    with(secretRead, a.getMember),
			delete: with(credentialWrite, a.revokeToken),
		},
		{
			path: "/1.0/cluster/certificate",
			post: with(credentialWrite, a.updateCertificate),
		},
		{
			path: memberEventsPath,
			get:  action{handler: a.memberEvents, access: a.allowMember},
		},
		{
			// Public: a new member has no trusted certificate yet; the join token's secret
			// is what authenticates it, and the handler refuses anything else.
			path: "/1.0/cluster/join",
			post: action{handler: a.join, public: true},
		},
	}
}

func (a clusterAPI) get(r *http.Request) response.Response {
	return response.SyncResponse(api.Cluster{ServerName: a.member, Enabled: a.identity != nil})
}

// members returns every member with its database role and whether it is online.
func (a clusterAPI) members(ctx context.Context) ([]api.ClusterMember, error) {
	var rows []db.Member
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetMembers(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}

	nodes, err := a.db.Nodes(ctx)
	if err != nil {
		return nil, err
	}

	now := time.Now()
	members := make([]api.ClusterMember, 0, len(rows))
	for _, row := range rows {
		m := api.ClusterMember{ServerName: row.Name, DatabaseAddress: row.DatabaseAddress, DatabaseRole: "none", Status: "Offline", LastHeartbeat: row.HeartbeatAt}
		address, _, _ := strings.Cut(row.Address, ",")
		if address != "" {
			m.URL = "https://" + address
		}

		for _, node := range nodes {
			if node.Address == row.DatabaseAddress {
				m.DatabaseRole = node.Role
				m.DatabaseLeader = node.Leader
			}
		}

		if now.Sub(row.HeartbeatAt) < offlineAfter {
			m.Status = "Online"
		}

		members = append(members, m)
	}

	return members, nil
}

func (a clusterAPI) listMembers(r *http.Request) response.Response {
	level, err := recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	members, err := a.members(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(members))
		for _, m := range members {
			urls = append(urls, api.ClusterMemberURL(m.ServerName))
		}

		return response.SyncResponse(urls)
	}

	return response.SyncResponse(members)
}

func (a clusterAPI) getMember(r *http.Request) response.Response {
	name, err := pathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	members, err := a.members(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	for _, m := range members {
		if m.ServerName == name {
			return response.SyncResponse(m)
		}
	}

	pending, err := a.pending(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	for _, m := range pending {
		if m.ServerName == name {
			return response.SyncResponse(m)
		}
	}

	return response.SmartError(notFoundf("cluster member %q not found: `lxd-deploy cluster list` shows the members, `lxd-deploy cluster list-tokens` the pending ones", name))
}

// createJoinToken issues a single-use join token for a new member, in LXD's format: base64
// JSON with the name, the cluster certificate's fingerprint, the members' HTTPS addresses
// and a secret of which only a hash is stored.
func (a clusterAPI) createJoinToken(r *http.Request) response.Response {
	if a.identity == nil {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered: restart it with --cluster-address to let others join"))
	}

	var req api.ClusterMembersPost
	err := decodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Name("cluster member", req.ServerName)
	if err != nil {
		return response.SmartError(badRequest(err))
	}

	members, err := a.members(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	addresses := []string{}
	for _, m := range members {
		if m.Status == "Online" && m.URL != "" {
			addresses = append(addresses, strings.TrimPrefix(m.URL, "https://"))
		}
	}

	if len(addresses) == 0 {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "no member serves HTTPS, which joining needs: start members with --https-address"))
	}

	secretBytes := make([]byte, 32)
	_, err = rand.Read(secretBytes)
	if err != nil {
		return response.SmartError(err)
	}

	secret := hex.EncodeToString(secretBytes)
	now := time.Now()
	expiresAt := now.Add(a.tokenExpiry).UTC()
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		return db.CreateJoinToken(ctx, tx, db.JoinToken{Name: req.ServerName, SecretHash: hashSecret(secret), ExpiresAt: expiresAt}, now)
	})
	if err != nil {
		return response.SmartError(err)
	}

	_, _, fingerprint := a.identity.clusterPEM()
	token := lxdapi.ClusterMemberJoinToken{ServerName: req.ServerName, Fingerprint: fingerprint, Addresses: addresses, Secret: secret, ExpiresAt: expiresAt}
	return response.SyncResponse(api.ClusterJoinToken{ClusterMemberJoinToken: token, Token: token.String()})
}

// join redeems a join token: the new member gets the cluster key pair and the database
// addresses to join. It reaches here over TLS, having checked that this member presents
// the cluster certificate whose fingerprint the token carries.
func (a clusterAPI) join(r *http.Request) response.Response {
	if a.identity == nil {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered"))
	}

	var req api.ClusterJoinPost
	err := decodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	if req.Secret == "" {
		return response.SmartError(forbidden("joining needs the secret of a join token"))
	}

	// The joining daemon presents its own member certificate: the token is bound to it
	// until the member joins. One without a certificate can redeem the token once.
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	claimant := "anonymous:" + hex.EncodeToString(nonce)
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		claimant = auth.Fingerprint(r.TLS.PeerCertificates[0])
	}

	var databaseAddresses []string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		token, err := db.ClaimJoinToken(ctx, tx, hashSecret(req.Secret), claimant, time.Now())
		if err != nil {
			return err
		}

		if token.Name != req.ServerName {
			return forbidden("join token was issued for member %q, not %q", token.Name, req.ServerName)
		}

		members, err := db.GetMembers(ctx, tx)
		for _, m := range members {
			databaseAddresses = append(databaseAddresses, m.DatabaseAddress)
		}

		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	certPEM, keyPEM, _ := a.identity.clusterPEM()
	return response.SyncResponse(api.ClusterJoinResponse{
		ClusterCertificate: string(certPEM),
		ClusterKey:         string(keyPEM),
		DatabaseAddresses:  databaseAddresses,
	})
}

// onlineDatabaseAddresses are the database addresses of the members heard from lately.
func (a clusterAPI) onlineDatabaseAddresses(ctx context.Context) (map[string]bool, error) {
	online := map[string]bool{}
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		members, err := db.GetMembers(ctx, tx)
		for _, m := range members {
			if time.Since(m.HeartbeatAt) < offlineAfter {
				online[m.DatabaseAddress] = true
			}
		}

		return err
	})
	return online, err
}

// deleteMember removes a member from the cluster, or revokes the join token of a member
// yet to join. An online member is removed cleanly:
// its database role goes to another member first. An offline one needs ?force=1, since
// it might only be unreachable for a while. This member cannot remove itself, and the
// last database voter cannot be removed.
func (a clusterAPI) deleteMember(r *http.Request) response.Response {
	name, err := pathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	if name == a.member {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "member %q cannot remove itself: run the removal against another member, or stop it with SIGTERM", name))
	}

	var member *db.Member
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		member, err = db.GetMember(ctx, tx, name)
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			// Not a member: maybe one yet to join, whose token this revokes.
			member = nil
			return db.DeleteJoinToken(ctx, tx, name)
		}

		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if member == nil {
		return response.EmptySyncResponse() // a pending member: its join token is revoked
	}

	online := time.Since(member.HeartbeatAt) < offlineAfter
	force := forceParam(r)
	if !online && !force {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "member %q is offline (last heartbeat %s): remove it with --force if it is not coming back", name, member.HeartbeatAt.Format(time.RFC3339)))
	}

	live, err := a.onlineDatabaseAddresses(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	err = a.db.RemoveNode(r.Context(), member.DatabaseAddress, live)
	if err != nil {
		return response.SmartError(err)
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteMember(ctx, tx, name)
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}
