// Package dbtest opens real dqlite databases for the tests of other packages: one node of
// its own (Open) or cluster nodes on loopback (OpenNode). The db package's own tests cannot
// import it (it imports db); they use newTestCluster, the same as Open.
package dbtest

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// Open opens a one-node dqlite database in a temporary directory, closed at the end of the
// test.
func Open(t testing.TB) *db.Cluster {
	t.Helper()
	c, err := db.Open(context.Background(), t.TempDir(), db.Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

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
