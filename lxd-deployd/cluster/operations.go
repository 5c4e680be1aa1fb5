package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// OperationRecorder keeps every operation of this member in dqlite
// (operations.Recorder), so that any member can list it and knows who runs it.
type OperationRecorder struct {
	member string

	// writes shares a transaction between the records of operations that change together
	// (100 concurrent launches start and end 100 operations), and with the fleet's writes.
	writes Writes
}

// NewOperationRecorder records a member's operations in dqlite, through writes (the
// database's group commit, *db.Cluster.Writes).
func NewOperationRecorder(writes Writes, member string) OperationRecorder {
	return OperationRecorder{member: member, writes: writes}
}

// Record saves an operation's state.
func (r OperationRecorder) Record(ctx context.Context, op lxdapi.Operation, project string, deploymentID int64) error {
	return r.writes.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.SaveOperation(ctx, tx, db.Operation{Operation: op, Member: r.member, Project: project, DeploymentID: deploymentID})
	})
}

// Forget removes an operation past its retention.
func (r OperationRecorder) Forget(ctx context.Context, id string) error {
	return r.writes.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteOperation(ctx, tx, id)
	})
}

// Operations answers for operations other members run: from their dqlite records, and by
// forwarding to the member itself where live state is needed (waiting, cancelling), as
// LXD does.
type Operations struct {
	db       Store
	member   string
	identity *Identity
}

// NewOperations answers, as member, for the operations of the others; identity is nil
// when the daemon is not clustered (nothing is forwarded).
func NewOperations(store Store, member string, identity *Identity) *Operations {
	return &Operations{db: store, member: member, identity: identity}
}

// Member is the name of the member that answers.
func (c *Operations) Member() string {
	return c.member
}

// Settle marks the operations this member left running before a restart as failed: their
// work died with the old process (reconcile repairs what it left half done).
func (c *Operations) Settle(ctx context.Context) error {
	return c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.FailOrphanedOperations(ctx, tx, c.member, time.Now(), time.Now().Add(-time.Hour))
	})
}

// Lookup returns the record of an operation: another member's, or one of this member's
// from before a restart.
func (c *Operations) Lookup(ctx context.Context, id string) (*db.Operation, error) {
	var op *db.Operation
	err := c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		op, err = db.GetOperation(ctx, tx, id)
		return err
	})
	return op, err
}

// Others returns the operations other members recorded.
func (c *Operations) Others(ctx context.Context) ([]db.Operation, error) {
	var all []db.Operation
	err := c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		all, err = db.GetOperations(ctx, tx)
		return err
	})

	result := []db.Operation{}
	for _, op := range all {
		if op.Member != c.member {
			result = append(result, op)
		}
	}

	return result, err
}

// Forward sends the request to member and returns its answer, for the caller to relay as
// is (and close). This member presents its own certificate and names the request's caller
// (auth.go): the other member checks that caller's access itself, and its records name the
// person, not this member.
func (c *Operations) Forward(r *http.Request, member string) (*http.Response, error) {
	if c.identity == nil {
		return nil, errors.New("not clustered")
	}

	var address, fingerprint string
	err := c.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		m, err := db.GetMember(ctx, tx, member)
		if err != nil {
			return err
		}

		if time.Since(m.HeartbeatAt) > OfflineAfter {
			return fmt.Errorf("member %q is offline", member)
		}

		address, _, _ = strings.Cut(m.Address, ",")
		fingerprint = m.CertificateFingerprint
		return nil
	})
	if err != nil {
		return nil, err
	}

	if address == "" {
		return nil, fmt.Errorf("member %q serves no HTTPS", member)
	}

	request, err := http.NewRequestWithContext(r.Context(), r.Method, "https://"+address+r.URL.RequestURI(), nil)
	if err != nil {
		return nil, err
	}

	// The member authorises the request as the original caller, not as this member.
	err = SetForwardedCaller(request, auth.CallerFromContext(r.Context()))
	if err != nil {
		return nil, err
	}

	// No overall timeout: a wait lasts as long as the caller asked; the caller's context
	// ends it.
	return c.identity.memberClient(fingerprint, 0).Do(request)
}

// WaitRecord polls the record of another member's operation until it finishes, the
// timeout passes (negative: none) or the request ends: the fallback when the member cannot
// be reached to wait there.
func (c *Operations) WaitRecord(ctx context.Context, id string, timeout time.Duration) (*db.Operation, error) {
	var deadline <-chan time.Time
	if timeout >= 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		deadline = timer.C
	}

	for {
		op, err := c.Lookup(ctx, id)
		if err != nil || op.StatusCode.IsFinal() {
			return op, err
		}

		select {
		case <-ctx.Done():
			return op, nil
		case <-deadline:
			return op, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}
