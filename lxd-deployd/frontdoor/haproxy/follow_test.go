package haproxy

import (
	"context"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// A server's admin state, as show stat reports it, tells whether it takes new connections:
// what a member that does not drive a shared door reads to see a drain done.
func TestStatRowOut(t *testing.T) {
	for status, out := range map[string]bool{"UP": false, "UP 1/2": false, "DOWN": false, "no check": false, "NOLB": false,
		"DRAIN": true, "DRAIN (agent)": true, "MAINT": true, "MAINT (via be/s)": true, "MAINT (resolution)": true} {
		if got := (statRow{"status": status}).out(); got != out {
			t.Errorf("status %q: out %v, want %v", status, got, out)
		}
	}
}

// Follow files the named backends' figures by key without touching HAProxy.
func TestOperatorFollow(t *testing.T) {
	o := &Operator{admin: "/nonexistent", keyOf: map[string]string{}}
	err := o.Follow(context.Background(), []frontdoor.Frontend{{Key: "default/shop/web", Backend: "web", Protocol: "http"}})
	if err != nil {
		t.Fatal(err)
	}

	rows, err := parseStat("# pxname,svname,scur,status\nweb,ld-web1,0,DRAIN\nweb,ld-web2,4,UP\nother,ld-x,1,UP\n")
	if err != nil {
		t.Fatal(err)
	}

	got := statsFromRows(rows, func(be string) (string, bool) { k, ok := o.keyOf[be]; return k, ok })
	servers := got["default/shop/web"].Servers
	if len(got) != 1 || !servers["web1"].Out || servers["web1"].Sessions != 0 || servers["web2"].Out || servers["web2"].Sessions != 4 {
		t.Fatalf("stats %+v", got)
	}

	if err := o.Follow(context.Background(), []frontdoor.Frontend{{Key: "default/shop/web", Listen: "127.0.0.1:80", Protocol: "http"}}); err == nil {
		t.Fatal("an operator's door followed a frontend with a listener of its own")
	}
}
