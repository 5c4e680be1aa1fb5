package main

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// pending returns the members yet to join: the outstanding join tokens.
func (a clusterAPI) pending(ctx context.Context) ([]api.ClusterMember, error) {
	var tokens []db.JoinToken
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		tokens, err = db.GetJoinTokens(ctx, tx, time.Now())
		return err
	})
	if err != nil {
		return nil, err
	}

	pending := make([]api.ClusterMember, 0, len(tokens))
	for _, t := range tokens {
		m := api.ClusterMember{ServerName: t.Name, Status: "Pending", DatabaseRole: "none", ExpiresAt: &t.ExpiresAt}
		if t.CertificateFingerprint != "" {
			m.Status = "Joining" // redeemed by a daemon that has not registered yet
		}

		pending = append(pending, m)
	}

	return pending, nil
}

// listTokens answers GET /1.0/cluster/tokens, as `lxc cluster list-tokens`.
func (a clusterAPI) listTokens(r *http.Request) response.Response {
	level, err := recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	pending, err := a.pending(r.Context())
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(pending))
		for _, m := range pending {
			urls = append(urls, api.ClusterMemberURL(m.ServerName))
		}

		return response.SyncResponse(urls)
	}

	return response.SyncResponse(pending)
}

// revokeToken answers DELETE /1.0/cluster/tokens/{member}, as `lxc cluster revoke-token`.
// A daemon that redeemed the token and has not joined can no longer join with it; the
// cluster certificate it was given stays valid until `lxd-deploy cluster update-certificate`.
func (a clusterAPI) revokeToken(r *http.Request) response.Response {
	name, err := pathName(r, "member", "cluster member")
	if err != nil {
		return response.SmartError(err)
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteJoinToken(ctx, tx, name)
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// rotationWait is how long POST /1.0/cluster/certificate waits for the members to move:
// less than the clients' default 30 s request timeout, so the answer says how far it got.
const rotationWait = 20 * time.Second

// updateCertificate rotates the cluster certificate (cluster_rotate.go) and waits until
// every member presents the new one and the old one is retired, or rotationWait passes:
// then it answers which members have not moved (offline ones hold the rotation until they
// come back or are removed).
func (a clusterAPI) updateCertificate(r *http.Request) response.Response {
	if a.identity == nil {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "this daemon is not clustered: it has no cluster certificate to rotate"))
	}

	certPEM, keyPEM, err := makeKeyPair(clusterName, true)
	if err != nil {
		return response.SmartError(err)
	}

	leaf, err := parsePEMCertificate(string(certPEM))
	if err != nil {
		return response.SmartError(err)
	}

	fingerprint := auth.Fingerprint(leaf)
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := db.GetClusterCertificates(ctx, tx)
		if err != nil {
			return err
		}

		if len(rows) > 1 {
			return lxdapi.StatusErrorf(http.StatusConflict, "a rotation of the cluster certificate is under way: wait for every member to move (offline ones must come back or be removed), then run it again")
		}

		err = recordClusterCertificate(ctx, tx, a.identity)
		if err != nil {
			return err
		}

		return db.AddClusterCertificate(ctx, tx, db.ClusterCertificate{Fingerprint: fingerprint, Certificate: string(certPEM), PrivateKey: string(keyPEM)}, time.Now())
	})
	if err != nil {
		return response.SmartError(err)
	}

	result := api.ClusterCertificate{Fingerprint: fingerprint, Waiting: []string{}}
	deadline := time.Now().Add(rotationWait)
	for {
		if a.syncCertificate != nil {
			_ = a.syncCertificate(r.Context())
		}

		var members []db.Member
		var rows []db.ClusterCertificate
		err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
			var err error
			members, err = db.GetMembers(ctx, tx)
			if err != nil {
				return err
			}

			rows, err = db.GetClusterCertificates(ctx, tx)
			return err
		})
		if err != nil {
			return response.SmartError(err)
		}

		result.Waiting = []string{}
		for _, m := range members {
			if m.ClusterFingerprint != fingerprint {
				result.Waiting = append(result.Waiting, m.Name)
			}
		}

		result.Complete = len(rows) == 1 && rows[0].Fingerprint == fingerprint
		if result.Complete || time.Now().After(deadline) || r.Context().Err() != nil {
			slices.Sort(result.Waiting)
			return response.SyncResponse(result)
		}

		select {
		case <-r.Context().Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
