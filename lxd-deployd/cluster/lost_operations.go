package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
)

// A member records its operations in dqlite and settles the ones it left unfinished when it
// starts again (Operations.Settle). A member that never comes back, or was removed
// from the cluster, cannot: its records would say "Running" for ever, and a waiter on
// another member would wait until its timeout. The holder of the reconcile lease settles
// them instead, as failed, saying which member went away and what to check.
const (
	// LostMemberGrace is how long a member must have been offline (no heartbeat) before its
	// unfinished operations are settled. Well past OfflineAfter, so that a member restarted
	// by its supervisor settles its own, and a short network stall settles nothing; a
	// removed member's are settled at once, since it stops itself at its next heartbeat.
	LostMemberGrace = 30 * time.Second

	// lostOperationsInterval is how often the lease holder looks for them.
	lostOperationsInterval = 5 * time.Second
)

// lostOperationError returns why op can no longer finish, or false while its member may
// still be running it: the member is absent from members (removed), or has not heartbeat
// for LostMemberGrace.
//
// It agrees with reconcile (fleet.OthersInFlux), which repairs the launch or delete record of a
// member offline past OfflineAfter, or removed, at its next round: the message says what
// that repair does rather than promise the work was or was not done.
func lostOperationError(op db.Operation, members []db.Member, now time.Time) (string, bool) {
	var gone string
	found := false
	for _, m := range members {
		if m.Name != op.Member {
			continue
		}

		found = true
		silent := now.Sub(m.HeartbeatAt)
		if silent < LostMemberGrace {
			return "", false
		}

		gone = fmt.Sprintf("member %s went offline while running this operation (no heartbeat for %s)", op.Member, silent.Round(time.Second))
	}

	if !found {
		gone = fmt.Sprintf("member %s was removed from the cluster while running this operation", op.Member)
	}

	return gone + ", so it stopped part way: " + lostOperationAdvice(op), true
}

// lostOperationAdvice says what becomes of the operation's work and what the caller should
// check before retrying.
func lostOperationAdvice(op db.Operation) string {
	var check []string
	for _, kind := range []string{"instances", "deployment_rollouts", "deployment_shapes"} {
		check = append(check, op.Resources[kind]...)
	}

	sort.Strings(check)
	advice := ""
	if len(op.Resources["instances"]) > 0 {
		// What reconcile's repair does with a record left creating or deleting.
		advice = "the next reconcile round (--reconcile-interval) on another member finishes or undoes its instance's launch or delete " +
			"(an instance LXD created is kept and started, one it did not create is dropped, a delete is completed); "
	}

	if len(check) == 0 {
		return advice + "check the state of what it changed before retrying"
	}

	return advice + "check " + strings.Join(check, ", ") + " before retrying"
}

// SettleLost fails the unfinished operations of lost members, each a compare-and-set
// fenced by the caller's lease, and returns how many it settled.
func (c *Operations) SettleLost(ctx context.Context, fence func(ctx context.Context, tx *sql.Tx) error, now time.Time) (int, error) {
	settled := 0
	err := c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		settled = 0
		if fence != nil {
			err := fence(ctx, tx)
			if err != nil {
				return err
			}
		}

		ops, err := db.GetUnfinishedOperations(ctx, tx)
		if err != nil || len(ops) == 0 {
			return err
		}

		members, err := db.GetMembers(ctx, tx)
		if err != nil {
			return err
		}

		for _, op := range ops {
			// This member is alive whatever its heartbeat says (a slow database): its
			// own operations end on their own.
			message, lost := lostOperationError(op, members, now)
			if !lost || op.Member == c.member {
				continue
			}

			ok, err := db.FailOperation(ctx, tx, op.ID, message, now)
			if err != nil {
				return err
			}

			if ok {
				settled++
			}
		}

		return nil
	})

	return settled, err
}

// SettleLostOperations runs SettleLost every lostOperationsInterval while this member
// holds the reconcile lease (held), until ctx ends.
func (m *Member) SettleLostOperations(ctx context.Context, held lease.Lease) {
	fence := func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) }
	// Never poked (its wake channel is nil): a round every interval only.
	loop.Loop{}.Run(ctx, lostOperationsInterval, m.logger, "settle the operations of lost members", func(ctx context.Context) error {
		settled, err := m.Operations().SettleLost(ctx, fence, time.Now())
		if err == nil && settled > 0 {
			m.logger.Warn("settled the unfinished operations of members that went away", "operations", settled)
		}

		return err
	})
}
