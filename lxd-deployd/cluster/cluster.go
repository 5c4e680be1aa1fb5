// Package cluster is the daemon's cluster machinery: this member's identity and
// certificates, joining with a token, registration and heartbeats, membership (tokens,
// listing, removal), cluster certificate rotation, the relay of other members' events,
// the record of operations in dqlite with forwarding to the member that runs one, and the
// settling of operations lost with their member.
//
// It sees the rest of the daemon through narrow interfaces: the replicated store
// (Store), the dqlite node's raft membership (Nodes), the operation records' group commit
// (Writes) and the event server's relay (EventRelay). Package main keeps the routes and
// wires it.
package cluster

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
)

const (
	// HeartbeatInterval is how often a member records that it is alive.
	HeartbeatInterval = time.Second

	// OfflineAfter is how long without a heartbeat before a member is listed offline.
	OfflineAfter = 5 * HeartbeatInterval
)

// Store is what the cluster machinery needs of the database: transactions on the
// replicated state, and the address of this member's dqlite node, which identifies the
// member in the members table (*db.Cluster).
type Store interface {
	Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error
	Read(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error
	Address() string
}

// Nodes is the dqlite node's view of raft: the nodes with their roles, and removing one
// (*db.Cluster).
type Nodes interface {
	Nodes(ctx context.Context) ([]db.Node, error)
	RemoveNode(ctx context.Context, address string, online map[string]bool) error
}

// Writes shares a transaction between writes that arrive together (*db.GroupCommit).
type Writes interface {
	Do(ctx context.Context, f db.GroupWrite) error
}

// Config is what a Member is built from.
type Config struct {
	// DB is the replicated store; Nodes the dqlite node (both *db.Cluster in the daemon).
	DB    Store
	Nodes Nodes

	// Identity is this member's credentials; nil when the daemon is not clustered.
	Identity *Identity

	// Name is this member's name, as Register recorded it.
	Name string

	// TokenExpiry is how long a join token can be used.
	TokenExpiry time.Duration

	Logger *slog.Logger
}

// Member is this daemon as a member of its cluster (a single node is a cluster of one).
type Member struct {
	db          Store
	nodes       Nodes
	identity    *Identity
	name        string
	tokenExpiry time.Duration
	logger      *slog.Logger
}

// New returns the member described by cfg.
func New(cfg Config) *Member {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	return &Member{db: cfg.DB, nodes: cfg.Nodes, identity: cfg.Identity, name: cfg.Name, tokenExpiry: cfg.TokenExpiry, logger: logger}
}

// Name is this member's name.
func (m *Member) Name() string {
	return m.name
}

// Clustered reports whether the daemon has cluster credentials (started with
// --cluster-address, or joined).
func (m *Member) Clustered() bool {
	return m.identity != nil
}

// Operations answers for the operations of other members.
func (m *Member) Operations() *Operations {
	return NewOperations(m.db, m.name, m.identity)
}
