// Package dbtest opens real dqlite nodes on loopback for the tests of other packages (the
// db package's own tests cannot import it: it imports db).
package dbtest

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// LoopbackAddress returns a loopback address that was free a moment ago, for a node to
// listen on.
func LoopbackAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// OpenNode opens a dqlite node in a temporary directory on a fresh loopback address,
// joining the nodes at the addresses join names (none: a new cluster), and returns it with
// its address and a function that closes it. The node is closed at the end of the test
// unless the test closed it before (a member that goes away): closing twice would free
// the dqlite node twice.
func OpenNode(t testing.TB, join ...string) (*db.Cluster, string, func(ctx context.Context)) {
	t.Helper()
	ctx := context.Background()
	address := LoopbackAddress(t)
	node, err := db.Open(ctx, t.TempDir(), db.Options{Address: address, Cluster: join})
	if err != nil {
		t.Fatal(err)
	}

	var once sync.Once
	closeNode := func(ctx context.Context) { once.Do(func() { _ = node.Close(ctx) }) }
	t.Cleanup(func() { closeNode(ctx) })
	return node, address, closeNode
}
