package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// newTestCert makes a self-signed certificate and returns it parsed with its PEM.
func newTestCert(t *testing.T, name string) (*x509.Certificate, string) {
	t.Helper()
	certPEM, _, err := cluster.MakeKeyPair(name, false)
	if err != nil {
		t.Fatal(err)
	}

	cert, err := auth.ParsePEMCertificate(string(certPEM))
	if err != nil {
		t.Fatal(err)
	}

	return cert, string(certPEM)
}

// TestMemberAuthentication: a member is known by its own certificate while its row exists;
// it may use the member routes only; what it forwards is authorised as the caller it names,
// looked up in this member's trust store; nobody else can name a caller; the cluster
// certificate is no credential.
func TestMemberAuthentication(t *testing.T) {
	store := dbtest.Open(t)
	dir := t.TempDir()
	err := cluster.GenerateClusterCertificate(filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key"))
	if err != nil {
		t.Fatal(err)
	}

	identity, err := cluster.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}

	m2, m2PEM := newTestCert(t, cluster.MemberServerName)
	alice, alicePEM := newTestCert(t, "alice")
	gov, govPEM := newTestCert(t, "gov")
	err = store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		err := db.SaveMember(ctx, tx, db.Member{Name: "m2", Address: "127.0.0.1:1", DatabaseAddress: "db2", StartedAt: time.Now(), HeartbeatAt: time.Now(), Certificate: m2PEM, CertificateFingerprint: auth.Fingerprint(m2)})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: auth.Fingerprint(alice), Type: api.CertificateTypeClient, Name: "alice", Certificate: alicePEM})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: auth.Fingerprint(gov), Type: api.CertificateTypeDeployments, Name: "gov", Certificate: govPEM})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	clusterLeaf, err := x509.ParseCertificate(identity.ClusterCertificate().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}

	request := func(peer *x509.Certificate, forwarded *auth.Caller) *auth.Caller {
		t.Helper()
		r := httptest.NewRequest("GET", "/1.0/deployments", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{peer}}
		if forwarded != nil {
			err := cluster.SetForwardedCaller(r, forwarded)
			if err != nil {
				t.Fatal(err)
			}
		}

		caller, err := cluster.AuthenticateTLS(r, store, true)
		if err != nil {
			t.Fatal(err)
		}

		return caller
	}

	allowed := func(check rest.AccessCheck, caller *auth.Caller) bool {
		r := httptest.NewRequest("GET", "/", nil)
		return check(r.WithContext(auth.WithCaller(r.Context(), caller))) == nil
	}

	clusterAPI := clusterAPI{member: cluster.New(cluster.Config{DB: store, Nodes: store, Identity: identity})}
	member := request(m2, nil)
	if member.CertificateType != auth.CertificateTypeMember || member.Name != "m2" || member.IsAdmin() {
		t.Fatalf("m2's own certificate: %+v", member)
	}

	if allowed(allowAdmin, member) || allowed(allowTrusted, member) || !allowed(clusterAPI.allowMember, member) {
		t.Fatal("a member certificate may use the member routes, and nothing else")
	}

	// Forwarded for alice: authorised and recorded as alice.
	forwarded := request(m2, &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: auth.Fingerprint(alice), CertificateType: api.CertificateTypeClient, Name: "alice"})
	if !forwarded.IsAdmin() || forwarded.Name != "alice" || forwarded.Via != "m2" || allowed(clusterAPI.allowMember, forwarded) {
		t.Fatalf("forwarded for alice: %+v", forwarded)
	}

	by := rest.RequestorFromContext(auth.WithCaller(context.Background(), forwarded))
	if by.Name != "alice" || by.Fingerprint != auth.Fingerprint(alice) {
		t.Fatalf("a forwarded request is recorded as %+v, not as alice", by)
	}

	// The type comes from this member's trust store, not from the header.
	claimed := request(m2, &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: auth.Fingerprint(gov), CertificateType: api.CertificateTypeClient, Name: "gov"})
	if claimed.IsAdmin() || claimed.CertificateType != api.CertificateTypeDeployments {
		t.Fatalf("a forwarded deployments certificate claiming to be a client: %+v", claimed)
	}

	// A client certificate cannot name someone else.
	direct := request(alice, &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true, Name: "root"})
	if direct.Protocol != auth.ProtocolTLS || direct.Name != "alice" || direct.Via != "" {
		t.Fatalf("alice naming the unix socket: %+v", direct)
	}

	// The cluster certificate authenticates nothing.
	if c := request(clusterLeaf, nil); c.Trusted {
		t.Fatalf("the cluster certificate: %+v", c)
	}

	// Revoking alice revokes what members forward for her; removing m2 revokes m2.
	err = store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		cert, err := db.GetCertificate(ctx, tx, auth.Fingerprint(alice))
		if err != nil {
			return err
		}

		return db.DeleteCertificate(ctx, tx, cert.ID)
	})
	if err != nil {
		t.Fatal(err)
	}

	if c := request(m2, &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: auth.Fingerprint(alice), Name: "alice"}); c.Trusted {
		t.Errorf("forwarded for a deleted certificate: %+v", c)
	}

	err = store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteMember(ctx, tx, "m2")
	})
	if err != nil {
		t.Fatal(err)
	}

	if c := request(m2, nil); c.Trusted {
		t.Fatalf("a removed member: %+v", c)
	}

	if c := request(m2, &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}); c.Trusted {
		t.Fatalf("a removed member forwarding: %+v", c)
	}
}
