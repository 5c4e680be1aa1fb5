package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// newClusterTestAPI serves the cluster routes of member m1 over a real dqlite; clustered
// gives it a cluster key pair.
func newClusterTestAPI(t *testing.T, clustered bool) (*testAPI, *cluster.Identity) {
	t.Helper()
	store := dbtest.Open(t)
	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return db.SaveMember(ctx, tx, db.Member{Name: "m1", Address: "127.0.0.1:8444", DatabaseAddress: store.Address(), StartedAt: time.Now(), HeartbeatAt: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}

	var identity *cluster.Identity
	if clustered {
		dir := t.TempDir()
		err = cluster.GenerateClusterCertificate(filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key"))
		if err == nil {
			identity, err = cluster.LoadIdentity(dir)
		}

		if err != nil {
			t.Fatal(err)
		}
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &testAPI{t: t, caller: &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}}
	api := clusterAPI{member: cluster.New(cluster.Config{DB: store, Nodes: store, Identity: identity, Name: "m1", TokenExpiry: time.Hour, Logger: logger}), events: events.NewServer(logger, "m1")}
	a.router = rest.NewRouter(clusterEndpoints(api), func(r *http.Request) (*auth.Caller, error) { return a.caller, nil }, logger, false)
	return a, identity
}

func TestClusterAPI(t *testing.T) {
	a, identity := newClusterTestAPI(t, true)
	members := a.expect("GET", "/1.0/cluster/members?recursion=1", "", 200, "")["metadata"].([]any)
	m1 := members[0].(map[string]any)
	if len(members) != 1 || m1["server_name"] != "m1" || m1["database_role"] != "voter" || m1["database_leader"] != true || m1["status"] != "Online" || m1["url"] != "https://127.0.0.1:8444" {
		t.Fatalf("members: %v", members)
	}

	a.expect("POST", "/1.0/cluster/members", `{"server_name":"2bad"}`, 400, "must not start with a digit")
	a.expect("POST", "/1.0/cluster/members", `{"server_name":"m1"}`, 409, "taken")
	token := a.expect("POST", "/1.0/cluster/members", `{"server_name":"m2"}`, 200, "")["metadata"].(map[string]any)
	certPEM, keyPEM, fingerprint := identity.PEM()
	if token["fingerprint"] != fingerprint || token["token"] == "" || token["server_name"] != "m2" {
		t.Fatalf("token: %v", token)
	}

	a.expect("POST", "/1.0/cluster/members", `{"server_name":"m2"}`, 409, "unused join token")

	// Joining: anyone may try, only the secret of a token for that name works, once.
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS}
	a.expect("POST", "/1.0/cluster/join", `{"server_name":"m2","secret":"nope"}`, 403, "not valid")
	a.expect("POST", "/1.0/cluster/join", `{"server_name":"m2"}`, 403, "secret")
	body, _ := json.Marshal(map[string]string{"server_name": "m2", "secret": token["secret"].(string)})
	joined := a.expect("POST", "/1.0/cluster/join", string(body), 200, "")["metadata"].(map[string]any)
	if joined["cluster_certificate"] != string(certPEM) || joined["cluster_key"] != string(keyPEM) || len(joined["database_addresses"].([]any)) != 1 {
		t.Fatalf("join answer: %v", joined)
	}

	a.expect("POST", "/1.0/cluster/join", string(body), 403, "already used")

	// The rest is for admins; the member event stream only for members.
	for _, route := range [][2]string{{"GET", "/1.0/cluster"}, {"GET", "/1.0/cluster/members"}, {"POST", "/1.0/cluster/members"}, {"GET", "/1.0/cluster/members/m1"}, {"DELETE", "/1.0/cluster/members/m1"}} {
		a.expect(route[0], route[1], `{"server_name":"x"}`, 403, "")
	}

	a.caller = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	a.expect("GET", cluster.MemberEventsPath, "", 403, "only cluster members")
	a.expect("DELETE", "/1.0/cluster/members/m1", "", 400, "cannot remove itself")
	a.expect("DELETE", "/1.0/cluster/members/m9", "", 404, "not found")
	info := a.expect("GET", "/1.0/cluster", "", 200, "")["metadata"].(map[string]any)
	if info["server_name"] != "m1" || info["enabled"] != true {
		t.Fatalf("cluster: %v", info)
	}
}

func TestClusterAPINotClustered(t *testing.T) {
	a, _ := newClusterTestAPI(t, false)
	a.expect("POST", "/1.0/cluster/members", `{"server_name":"m2"}`, 409, "--cluster-address")
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS}
	a.expect("POST", "/1.0/cluster/join", `{"server_name":"m2","secret":"x"}`, 409, "not clustered")
}
