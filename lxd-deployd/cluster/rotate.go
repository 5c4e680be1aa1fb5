package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Rotating the cluster certificate (lxd-deploy cluster update-certificate) without
// downtime. The cluster certificate is the one credential all members share: dqlite's TLS
// between members, and what a joining daemon checks against its token. Whoever holds an
// old one (a removed member, a daemon that redeemed a token and never joined, a leaked
// copy) can reach the database until it is retired. A rotation records a new certificate
// in cluster_certificates; then every member, once a second (SyncCertificate):
//  1. accepts every certificate not retired, and records the newest it accepts;
//  2. presents the newest once every member accepts it, so no handshake is refused;
//  3. retires the older ones once every member presents the newest.
// Members offline hold the rotation at 1 or 2 until they come back or are removed.

// acceptedFile keeps the certificates a member accepts across a restart mid-rotation.
const acceptedFile = "cluster-accepted.crt"

// accept makes the member accept the cluster certificates (PEM) besides the one it
// presents, and keeps them in acceptedFile; it reports whether anything changed.
func (c *Identity) accept(certs []string) (bool, error) {
	certPEM, keyPEM, _ := c.PEM()
	var bundle [][]byte
	for _, p := range certs {
		bundle = append(bundle, []byte(p))
	}

	before := c.AcceptedClusterCertificates()
	err := c.setCluster(certPEM, keyPEM, bundle)
	if err != nil {
		return false, err
	}

	after := c.AcceptedClusterCertificates()
	if sameCertificates(before, after) {
		return false, nil
	}

	var data bytes.Buffer
	for _, cert := range after {
		_ = pem.Encode(&data, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	}

	return true, writeFileAtomic(filepath.Join(c.dataDir, acceptedFile), data.Bytes(), 0o644)
}

// present makes the member present a new cluster certificate, in memory and in its data
// directory (cluster.crt, cluster.key), still accepting also.
func (c *Identity) present(certPEM string, keyPEM string, also []string) error {
	var bundle [][]byte
	for _, p := range also {
		bundle = append(bundle, []byte(p))
	}

	err := c.setCluster([]byte(certPEM), []byte(keyPEM), bundle)
	if err != nil {
		return err
	}

	err = writeFileAtomic(filepath.Join(c.dataDir, "cluster.key"), []byte(keyPEM), 0o600)
	if err != nil {
		return err
	}

	return writeFileAtomic(filepath.Join(c.dataDir, "cluster.crt"), []byte(certPEM), 0o644)
}

// loadAccepted reads acceptedFile, if any, into the accepted certificates.
func (c *Identity) loadAccepted() error {
	data, err := os.ReadFile(filepath.Join(c.dataDir, acceptedFile))
	if os.IsNotExist(err) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("read accepted cluster certificates: %w", err)
	}

	var certs []string
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}

		certs = append(certs, string(pem.EncodeToMemory(block)))
	}

	_, err = c.accept(certs)
	return err
}

func sameCertificates(a []*x509.Certificate, b []*x509.Certificate) bool {
	if len(a) != len(b) {
		return false
	}

	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}

	return true
}

// writeFileAtomic replaces a file in one rename, so a crash leaves the old or the new one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".new"
	err := os.WriteFile(tmp, data, mode)
	if err != nil {
		return err
	}

	return os.Rename(tmp, path)
}

// SyncCertificate takes this member one step along a rotation, if one is under way.
func (m *Member) SyncCertificate(ctx context.Context) error {
	if m.identity == nil {
		return nil
	}

	return m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := db.GetClusterCertificates(ctx, tx)
		if err != nil || len(rows) == 0 {
			return err
		}

		members, err := db.GetMembers(ctx, tx)
		if err != nil {
			return err
		}

		plan := planClusterCertificate(rows, members, m.db.Address(), m.identity)
		pems := make([]string, 0, len(rows))
		for _, r := range rows {
			pems = append(pems, r.Certificate)
		}

		_, err = m.identity.accept(pems)
		if err != nil {
			return err
		}

		if plan.present != nil {
			err = m.identity.present(plan.present.Certificate, plan.present.PrivateKey, pems)
			if err != nil {
				return err
			}

			m.logger.Info("cluster certificate rotated: presenting the new one", "fingerprint", plan.present.Fingerprint)
		}

		_, _, presented := m.identity.PEM()
		if plan.me.ClusterAccepted != plan.newest.Fingerprint {
			err = db.SetMemberClusterAccepted(ctx, tx, m.db.Address(), plan.newest.Fingerprint)
			if err != nil {
				return err
			}
		}

		if plan.me.ClusterFingerprint != presented {
			err = db.SetMemberClusterFingerprint(ctx, tx, m.db.Address(), presented)
			if err != nil {
				return err
			}
		}

		if plan.retire {
			return db.RetireClusterCertificatesBefore(ctx, tx, plan.newest.ID, time.Now())
		}

		return nil
	})
}

// certificatePlan is what one member does in one step of a rotation.
type certificatePlan struct {
	me      db.Member
	newest  db.ClusterCertificate
	present *db.ClusterCertificate // switch to presenting it, nil: keep the current one
	retire  bool                   // retire every certificate older than newest
}

// planClusterCertificate decides a member's step over one reading of the rotation state:
// rows the certificates not retired (oldest first), members every member's progress.
func planClusterCertificate(rows []db.ClusterCertificate, members []db.Member, self string, identity *Identity) certificatePlan {
	plan := certificatePlan{newest: rows[len(rows)-1]}
	_, _, presented := identity.PEM()
	allAccept, allPresent := true, true
	for i := range members {
		m := members[i]
		if m.DatabaseAddress == self {
			plan.me = m
			// This member accepts every certificate not retired from this step on.
			m.ClusterAccepted = plan.newest.Fingerprint
			m.ClusterFingerprint = presented
		}

		allAccept = allAccept && m.ClusterAccepted == plan.newest.Fingerprint
		allPresent = allPresent && m.ClusterFingerprint == plan.newest.Fingerprint
	}

	if presented != plan.newest.Fingerprint && allAccept && plan.newest.PrivateKey != "" {
		plan.present = &plan.newest
		// Presenting it in this step: count this member as presenting it.
		allPresent = true
		for _, m := range members {
			if m.DatabaseAddress != self && m.ClusterFingerprint != plan.newest.Fingerprint {
				allPresent = false
			}
		}
	}

	plan.retire = allPresent && len(rows) > 1
	return plan
}

// recordClusterCertificate makes sure the certificate this member presents is in
// cluster_certificates, before a rotation adds a newer one.
func recordClusterCertificate(ctx context.Context, tx *sql.Tx, identity *Identity) error {
	certPEM, keyPEM, fingerprint := identity.PEM()
	return db.AddClusterCertificate(ctx, tx, db.ClusterCertificate{Fingerprint: fingerprint, Certificate: string(certPEM), PrivateKey: string(keyPEM)}, time.Now())
}

// rotationWait is how long Rotate waits for the members to move: less than the clients'
// default 30 s request timeout, so the answer says how far it got.
const rotationWait = 20 * time.Second

// Rotate starts a rotation of the cluster certificate to a new one and waits until every
// member presents it and the old one is retired, or rotationWait passes, or ctx ends: then
// it answers which members have not moved (offline ones hold the rotation until they come
// back or are removed).
func (m *Member) Rotate(ctx context.Context) (*api.ClusterCertificate, error) {
	if m.identity == nil {
		return nil, ErrNothingToRotate
	}

	certPEM, keyPEM, err := MakeKeyPair(clusterName, true)
	if err != nil {
		return nil, err
	}

	leaf, err := auth.ParsePEMCertificate(string(certPEM))
	if err != nil {
		return nil, err
	}

	fingerprint := auth.Fingerprint(leaf)
	err = m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := db.GetClusterCertificates(ctx, tx)
		if err != nil {
			return err
		}

		if len(rows) > 1 {
			return lxdapi.StatusErrorf(http.StatusConflict, "a rotation of the cluster certificate is under way: wait for every member to move (offline ones must come back or be removed), then run it again")
		}

		err = recordClusterCertificate(ctx, tx, m.identity)
		if err != nil {
			return err
		}

		return db.AddClusterCertificate(ctx, tx, db.ClusterCertificate{Fingerprint: fingerprint, Certificate: string(certPEM), PrivateKey: string(keyPEM)}, time.Now())
	})
	if err != nil {
		return nil, err
	}

	result := &api.ClusterCertificate{Fingerprint: fingerprint, Waiting: []string{}}
	deadline := time.Now().Add(rotationWait)
	for {
		_ = m.SyncCertificate(ctx)
		var members []db.Member
		var rows []db.ClusterCertificate
		err = m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			members, err = db.GetMembers(ctx, tx)
			if err != nil {
				return err
			}

			rows, err = db.GetClusterCertificates(ctx, tx)
			return err
		})
		if err != nil {
			return nil, err
		}

		result.Waiting = []string{}
		for _, member := range members {
			if member.ClusterFingerprint != fingerprint {
				result.Waiting = append(result.Waiting, member.Name)
			}
		}

		result.Complete = len(rows) == 1 && rows[0].Fingerprint == fingerprint
		if result.Complete || time.Now().After(deadline) || ctx.Err() != nil {
			slices.Sort(result.Waiting)
			return result, nil
		}

		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
