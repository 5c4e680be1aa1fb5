package db

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/canonical/go-dqlite/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// Raft timing. dqlite derives its heartbeat and election timeouts from the network
// latency; its default election timeout (3 s, randomised up to 6 s) made a leader's death
// stall writes for over 6 s. At 20 ms a SIGKILLed leader stalls writes about 0.7 s on
// loopback (`make bench`, BenchmarkLeaderLoss). Lower values shorten that further but let
// a member starved of CPU for a few hundred milliseconds trigger needless elections, each
// a short stall that loses nothing.
const networkLatency = 20 * time.Millisecond

// rolesAdjustment is how often the dqlite leader checks that there are 3 voters when 3
// members are online, promoting a spare or stand-by to replace a voter that went away.
// go-dqlite's default is 30 s: a cluster that lost a voter ran that long with only two.
const rolesAdjustment = 3 * time.Second

// Node is a member of the dqlite cluster as raft sees it.
type Node struct {
	ID      uint64
	Address string
	Role    string // voter, stand-by or spare
	Leader  bool
}

// Nodes lists the dqlite cluster's nodes with their roles, marking the leader.
func (c *Cluster) Nodes(ctx context.Context) ([]Node, error) {
	cli, err := c.app.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("reach the database leader: %w", err)
	}

	defer func() { _ = cli.Close() }()
	nodes, err := cli.Cluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("list database nodes: %w", err)
	}

	leader, err := cli.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the database leader: %w", err)
	}

	result := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		result = append(result, Node{ID: n.ID, Address: n.Address, Role: roleName(n.Role), Leader: leader != nil && leader.ID == n.ID})
	}

	return result, nil
}

func roleName(role client.NodeRole) string {
	switch role {
	case client.Voter:
		return "voter"
	case client.StandBy:
		return "stand-by"
	default:
		return "spare"
	}
}

// RemoveNode takes the node at address out of the dqlite cluster, handing its role over
// first: a spare or stand-by is promoted to take a voter's place, and leadership moves to
// another voter, so the cluster keeps its voters. online says which other nodes may take
// a role (nil: all). A voter with no online node to take its place cannot be removed.
func (c *Cluster) RemoveNode(ctx context.Context, address string, online map[string]bool) error {
	for attempt := 0; ; attempt++ {
		cli, err := c.app.Leader(ctx)
		if err != nil {
			return fmt.Errorf("reach the database leader: %w", err)
		}

		done, err := removeNode(ctx, cli, address, online)
		_ = cli.Close()
		if err != nil || done {
			return err
		}

		// A role moved (leadership or a promotion): ask the leader again.
		if attempt >= 10 {
			return lxdapi.StatusErrorf(http.StatusServiceUnavailable, "database leadership did not move away from %s: try again", address)
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeNode does one step of RemoveNode through the leader's client; false means a role
// moved and the caller must ask the leader again.
func removeNode(ctx context.Context, cli *client.Client, address string, online map[string]bool) (bool, error) {
	nodes, err := cli.Cluster(ctx)
	if err != nil {
		return false, fmt.Errorf("list database nodes: %w", err)
	}

	leader, err := cli.Leader(ctx)
	if err != nil {
		return false, fmt.Errorf("find the database leader: %w", err)
	}

	var target *client.NodeInfo
	var otherVoter, replacement *client.NodeInfo
	for i, n := range nodes {
		switch {
		case n.Address == address:
			target = &nodes[i]
		case online != nil && !online[n.Address]:
			// A dead node takes no role.
		case n.Role == client.Voter:
			otherVoter = &nodes[i]
		case replacement == nil || n.Role == client.StandBy:
			replacement = &nodes[i]
		}
	}

	if target == nil {
		return true, nil // not (or no longer) a database node
	}

	if target.Role == client.Voter && otherVoter == nil {
		// The last live voter: an online spare or stand-by takes the role first.
		if replacement == nil {
			return false, lxdapi.StatusErrorf(http.StatusConflict, "the member at %s is the last database voter and no online member can take its place: removing it would leave no database", address)
		}

		err = cli.Assign(ctx, replacement.ID, client.Voter)
		if err != nil {
			return false, fmt.Errorf("promote %s to database voter: %w", replacement.Address, err)
		}

		return false, nil
	}

	if leader != nil && leader.ID == target.ID {
		err = cli.Transfer(ctx, otherVoter.ID)
		if err != nil {
			return false, fmt.Errorf("transfer database leadership away from %s: %w", address, err)
		}

		return false, nil
	}

	if target.Role == client.Voter && replacement != nil {
		// Best effort: the leader's roles adjustment promotes one later if this fails.
		_ = cli.Assign(ctx, replacement.ID, client.Voter)
	}

	err = cli.Remove(ctx, target.ID)
	if err != nil {
		return false, fmt.Errorf("remove database node %s: %w", address, err)
	}

	return true, nil
}
