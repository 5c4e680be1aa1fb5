package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
)

// TestPendingMembers: outstanding join tokens are listed, shown and revoked as pending
// members, and a redeemed one is bound to the daemon that redeemed it.
func TestPendingMembers(t *testing.T) {
	a, _ := newClusterTestAPI(t, true)
	for _, name := range []string{"m2", "m3"} {
		a.expect("POST", "/1.0/cluster/members", `{"server_name":"`+name+`"}`, 200, "")
	}

	pending := a.expect("GET", "/1.0/cluster/tokens?recursion=1", "", 200, "")["metadata"].([]any)
	if len(pending) != 2 || pending[0].(map[string]any)["status"] != "Pending" || pending[0].(map[string]any)["expires_at"] == nil {
		t.Fatalf("pending members: %v", pending)
	}

	urls := a.expect("GET", "/1.0/cluster/tokens", "", 200, "")["metadata"].([]any)
	if len(urls) != 2 || urls[1] != "/1.0/cluster/members/m3" {
		t.Fatalf("pending member URLs: %v", urls)
	}

	m3 := a.expect("GET", "/1.0/cluster/members/m3", "", 200, "")["metadata"].(map[string]any)
	if m3["status"] != "Pending" {
		t.Fatalf("a pending member: %v", m3)
	}

	a.expect("DELETE", "/1.0/cluster/members/m3", "", 200, "")
	a.expect("GET", "/1.0/cluster/members/m3", "", 404, "list-tokens")
	a.expect("DELETE", "/1.0/cluster/tokens/m3", "", 404, "not found")

	// A daemon redeems m2's token presenting its member certificate: it may again, another
	// may not, and the token shows as Joining until the member registers.
	token := a.expect("POST", "/1.0/cluster/members", `{"server_name":"m4"}`, 200, "")["metadata"].(map[string]any)
	body, _ := json.Marshal(map[string]string{"server_name": "m4", "secret": token["secret"].(string)})
	redeem := func(cert *x509.Certificate, status int) {
		t.Helper()
		req := httptest.NewRequest("POST", "/1.0/cluster/join", strings.NewReader(string(body)))
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		rec := httptest.NewRecorder()
		a.caller = &auth.Caller{Protocol: auth.ProtocolTLS}
		a.router.ServeHTTP(rec, req)
		if rec.Code != status {
			t.Fatalf("redeem: HTTP %d, want %d: %s", rec.Code, status, rec.Body.String())
		}
	}

	first, _ := newTestCert(t, cluster.MemberServerName)
	second, _ := newTestCert(t, cluster.MemberServerName)
	redeem(first, 200)
	redeem(first, 200)
	redeem(second, 403)
	a.caller = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	m4 := a.expect("GET", "/1.0/cluster/tokens/m4", "", 200, "")["metadata"].(map[string]any)
	if m4["status"] != "Joining" {
		t.Fatalf("a redeemed token: %v", m4)
	}
}
