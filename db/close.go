package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Shutdown budgets. A member stopping in a healthy cluster finds the leader at once and
// hands over in well under a second; a member that lost its quorum finds no leader at all,
// and before these bounds it waited the whole handover timeout (and go-dqlite's own minute)
// before it could exit.
const (
	// handoverLeaderWait bounds the search for a leader to hand this member's role to.
	handoverLeaderWait = 3 * time.Second

	// handoverWait bounds the whole handover: promotions and the leadership transfer.
	handoverWait = 5 * time.Second

	// closeWait bounds stopping the dqlite node itself.
	closeWait = 3 * time.Second
)

// Handover gives this node's database role (and leadership) to another online node, so
// that stopping it stalls nobody: called before a clean shutdown or leaving the cluster.
// A single node has nobody to hand over to and returns nil. Without a reachable leader
// (the other voters are gone: no quorum) it gives up after handoverLeaderWait with an
// error that says what it could not hand over; the others take the role back when they
// return.
func (c *Cluster) Handover(ctx context.Context) error {
	c.handedOver.Store(true)
	ctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()

	role, others := c.localView(ctx)
	if role != "" && len(others) == 0 {
		return nil
	}

	leaderCtx, cancelLeader := context.WithTimeout(ctx, handoverLeaderWait)
	cli, err := c.app.Leader(leaderCtx)
	cancelLeader()
	if err != nil {
		return fmt.Errorf("could not hand over this member's database role (%s) at %s: no leader answered within %s, so the cluster has no quorum (other members: %s); they take the role back when a majority is online again",
			orUnknown(role), c.app.Address(), handoverLeaderWait, orUnknown(strings.Join(others, ", ")))
	}

	_ = cli.Close()
	err = c.app.Handover(ctx)
	if err != nil {
		return fmt.Errorf("could not hand over this member's database role (%s) at %s: %w", orUnknown(role), c.app.Address(), err)
	}

	return nil
}

// localView returns this node's role and the other nodes' addresses as this node's own
// raft configuration has them, which needs no leader: enough to tell a single node from
// a member and to say whom a failed handover concerned. Empty when the node does not say.
func (c *Cluster) localView(ctx context.Context) (string, []string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cli, err := c.app.Client(ctx)
	if err != nil {
		return "", nil
	}

	defer func() { _ = cli.Close() }()
	nodes, err := cli.Cluster(ctx)
	if err != nil {
		return "", nil
	}

	role := ""
	var others []string
	for _, n := range nodes {
		if n.Address == c.app.Address() {
			role = roleName(n.Role)
			continue
		}

		others = append(others, n.Address+" ("+roleName(n.Role)+")")
	}

	return role, others
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}

	return s
}

// Close hands the node's role over (unless Handover already ran), then stops the node.
// Each step has a deadline: a node that cannot finish stopping is left to the process's
// exit, which dqlite survives as it survives a crash.
func (c *Cluster) Close(ctx context.Context) error {
	if !c.handedOver.Load() {
		// A single node has nobody to hand over to; a member without quorum cannot, and
		// its caller, which did not ask for a report, loses nothing by not hearing why.
		_ = c.Handover(ctx)
	}

	ctx, cancel := context.WithTimeout(ctx, closeWait)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_ = c.db.Close()
		done <- c.app.Close()
	}()

	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errors.New("the dqlite node did not stop within " + closeWait.String() + ": exiting without it (it recovers as after a crash)")
	}
}
