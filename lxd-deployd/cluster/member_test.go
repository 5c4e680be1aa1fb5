package cluster

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// TestMemberAddresses: a specific --https-address is dialled as is; a wildcard one on the
// host of the database address; without a usable one, every address of the listener.
func TestMemberAddresses(t *testing.T) {
	all := func() []string { return []string{"192.0.2.1:8443", "127.0.0.1:8443"} }
	tests := []struct {
		name, https, database string
		want                  []string
	}{
		{"no HTTPS", "", "10.0.0.1:9000", all()},
		{"a specific address", "10.0.0.2:8443", "10.0.0.1:9000", []string{"10.0.0.2:8443"}},
		{"a host name", "member1:8443", "10.0.0.1:9000", []string{"member1:8443"}},
		{"IPv4 wildcard", "0.0.0.0:8443", "10.0.0.1:9000", []string{"10.0.0.1:8443"}},
		{"empty host", ":8443", "10.0.0.1:9000", []string{"10.0.0.1:8443"}},
		{"IPv6 wildcard", "[::]:8443", "[fd00::1]:9000", []string{"[fd00::1]:8443"}},
		{"a single node on a unix socket", "0.0.0.0:8443", "@dqlite", all()},
	}

	for _, test := range tests {
		got := MemberAddresses(test.https, test.database, all)
		if !slices.Equal(got, test.want) {
			t.Errorf("%s: %v, want %v", test.name, got, test.want)
		}
	}
}

// TestRegister: a member is recorded under its configured name with its addresses and its
// own certificate; restarted without a name it keeps the one recorded for its database
// address.
func TestRegister(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	dir := t.TempDir()
	err := GenerateClusterCertificate(filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key"))
	if err != nil {
		t.Fatal(err)
	}

	identity, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}

	name, err := Register(ctx, store, identity, "m1", []string{"10.0.0.1:8443", "10.0.0.2:8443"})
	if err != nil || name != "m1" {
		t.Fatalf("register m1: %q (%v)", name, err)
	}

	name, err = Register(ctx, store, identity, "", []string{"10.0.0.1:8443"})
	if err != nil || name != "m1" {
		t.Fatalf("a restart without --cluster-name: %q (%v), want m1", name, err)
	}

	var member *db.Member
	err = store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		member, err = db.GetMemberByDatabaseAddress(ctx, tx, store.Address())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	_, _, clusterFingerprint := identity.PEM()
	memberCert, err := auth.ParsePEMCertificate(member.Certificate)
	if err != nil {
		t.Fatal(err)
	}

	if member.Name != "m1" || member.Address != "10.0.0.1:8443" || member.CertificateFingerprint != auth.Fingerprint(memberCert) || member.ClusterFingerprint != clusterFingerprint {
		t.Fatalf("recorded member: %+v", member)
	}
}

// TestPrepare: the cluster flags are checked before anything joins; without a token there
// is nothing to join.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	_, err := Prepare(ctx, JoinRequest{DataDir: t.TempDir()}, 0)
	if err == nil || !strings.Contains(err.Error(), "--cluster-join-token-expiry must be positive, got 0s") {
		t.Errorf("a zero expiry: %v", err)
	}

	_, err = Prepare(ctx, JoinRequest{DataDir: t.TempDir(), Name: "bad name"}, time.Hour)
	if err == nil || !strings.HasPrefix(err.Error(), "--cluster-name: ") {
		t.Errorf("a bad name: %v", err)
	}

	joined, err := Prepare(ctx, JoinRequest{DataDir: t.TempDir(), Name: "m1"}, time.Hour)
	if err != nil || joined != nil {
		t.Errorf("no token: %v %v", joined, err)
	}
}

// unavailableStore is a real store whose first writes find no leader (a member restarted
// while its cluster elects one), and whose writes fail for good when refuse is set.
type unavailableStore struct {
	Store
	failures int
	refuse   error
	tries    int
}

func (s *unavailableStore) Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	s.tries++
	if s.refuse != nil {
		return s.refuse
	}

	if s.failures > 0 {
		s.failures--
		return fmt.Errorf("record member %q: %w", "m1", sqldriver.ErrBadConn)
	}

	return s.Store.Transaction(ctx, f)
}

// TestRegisterWaitsOutAnElection: a start whose registration finds the database without a
// leader tries again (it exited at the first "driver: bad connection"); a refusal is
// final at once.
func TestRegisterWaitsOutAnElection(t *testing.T) {
	ctx := context.Background()
	store := &unavailableStore{Store: dbtest.Open(t), failures: 3}
	name, err := Register(ctx, store, nil, "m1", []string{"10.0.0.1:8443"})
	if err != nil || name != "m1" || store.failures != 0 {
		t.Fatalf("register through an election: %q (%v), %d failures left", name, err, store.failures)
	}

	taken := errors.New("cluster member name \"m1\" is taken")
	store.refuse, store.tries = taken, 0
	_, err = Register(ctx, store, nil, "m1", nil)
	if !errors.Is(err, taken) || store.tries != 1 {
		t.Fatalf("a refusal: %v after %d tries, want it after one", err, store.tries)
	}
}
