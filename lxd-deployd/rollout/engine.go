package rollout

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Requestor is who the engine's launches and deletes are by.
var Requestor = api.InternalRequestor("rollout")

// rolloutClaim decides which daemon of a cluster works on a rollout: a
// claimed_by/claimed_until pair on the rollout row, taken or renewed in each tick's
// transaction, and checked (fencing) in the transaction of every write a step makes.
//
// Why not a lease of the lease package (rollout/<id>): the claim lives and dies with the
// rollout row (nothing to release or clean up when it ends), one transaction claims every
// active rollout per tick instead of one lease transaction per rollout, and a rollout's
// steps on one daemon run on the engine's one goroutine, so the holder's name and an
// unexpired claim fence as well as a lease's token would.
type rolloutClaim interface {
	claim(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) (bool, error)

	// check fails with db.ErrRolloutClaimLost unless this daemon still holds r's claim
	// (and extends it): call it in the transaction of each write made for the rollout.
	check(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) error
}

// columnClaim claims rollouts through their claimed_by/claimed_until columns.
type columnClaim struct {
	owner string
	ttl   time.Duration
}

func (c columnClaim) claim(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) (bool, error) {
	// Held, r read in this transaction, with more than two thirds of its time left: no
	// write. A tick comes after every launch and delete of a rollout, each write is a
	// raft round, and the writes made for the rollout extend the claim anyway (check).
	if c.stillHeld(r, now) {
		return true, nil
	}

	return db.ClaimRollout(ctx, tx, r.ID, c.owner, now.Add(c.ttl), now)
}

// stillHeld says whether r's claim is this daemon's with more than two thirds of its TTL
// left.
func (c columnClaim) stillHeld(r db.Rollout, now time.Time) bool {
	return r.ClaimedBy == c.owner && r.ClaimedUntil.Sub(now) > c.ttl*2/3
}

func (c columnClaim) check(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) error {
	return db.HoldRolloutClaim(ctx, tx, r.ID, c.owner, now.Add(c.ttl), now)
}

// ReplacementName names an instance a rollout launches: <shape>-r<revision>-<6 hex>, so
// the name says which revision it runs (autohealing names its own after the instance it
// replaces: fleet/autoheal.go healedName).
func ReplacementName(shape string, revision int) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	tail := fmt.Sprintf("-r%d-%s", revision, hex.EncodeToString(suffix))
	if len(shape)+len(tail) > 63 {
		shape = shape[:63-len(tail)]
	}

	return shape + tail
}

// Engine runs the rollouts this daemon holds the claim of.
type Engine struct {
	db       *db.Cluster
	lxd      *backend.LXD
	fleet    Fleet
	reporter Reporter
	logger   *slog.Logger
	claim    rolloutClaim
	images   *imageWatcher

	// views is what the engine last read of its rollouts' instances in LXD.
	views liveViews

	// sockets gives a rollout's transient instances (a custom rollout's deployer, hooks)
	// their governor socket; transients are those a goroutine of this daemon starts or
	// follows.
	sockets    fleet.Sockets
	transients transientFollows

	// wake ticks the engine, and at once when poked (a rollout started, paused or resumed).
	wake loop.Loop
}

// Wakes are the loops that wake the engine (Rollouts) and its image-change trigger
// (Images) at once. The daemon makes them before the reporter that pokes them, and hands
// the same ones here: the engine reports through that reporter. A zero one is made here.
type Wakes struct {
	Rollouts loop.Loop
	Images   loop.Loop
}

// New builds the rollout engine of a daemon (owner: its database address), which launches
// and deletes through f and reports through r.
func New(cluster *db.Cluster, l *backend.LXD, f Fleet, r Reporter, logger *slog.Logger, owner string, sockets fleet.Sockets, wakes Wakes) *Engine {
	if wakes.Rollouts == (loop.Loop{}) {
		wakes.Rollouts = loop.New()
	}

	if wakes.Images == (loop.Loop{}) {
		wakes.Images = loop.New()
	}

	e := &Engine{db: cluster, lxd: l, fleet: f, reporter: r, logger: logger, claim: columnClaim{owner: owner, ttl: 15 * time.Second}, wake: wakes.Rollouts, sockets: sockets}
	e.images = &imageWatcher{engine: e, wake: wakes.Images}
	return e
}

// Run ticks every interval, or when poked, until ctx ends. The image-change trigger runs
// beside it (RunImageTrigger), in the daemon's task group as its own loop.
func (e *Engine) Run(ctx context.Context, interval time.Duration) {
	e.wake.Run(ctx, interval, e.logger, "rollouts", func(ctx context.Context) error {
		e.tick(ctx)
		return nil
	})
}

// RunImageTrigger runs the image-change trigger until ctx ends (image_trigger.go).
func (e *Engine) RunImageTrigger(ctx context.Context) {
	e.images.run(ctx)
}

// tick claims the active rollouts it can and moves each running one a step.
func (e *Engine) tick(ctx context.Context) {
	client, err := e.lxd.Conn()
	if err != nil {
		return
	}

	var mine []db.Rollout
	var active map[int64]bool // the views kept: the operations following a rollout read them on any member
	now := time.Now()
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		mine, active = nil, map[int64]bool{}
		rollouts, err := db.GetRollouts(ctx, tx, db.RolloutFilter{Active: true})
		if err != nil {
			return err
		}

		for _, r := range rollouts {
			active[r.ID] = true
			ok, err := e.claim.claim(ctx, tx, r, now)
			if err != nil {
				return err
			}

			if ok && r.Status == api.RolloutRunning {
				mine = append(mine, r)
			}
		}

		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("rollouts: claim", "err", err)
		}

		return
	}

	e.views.keep(active)
	e.sweepTransients(ctx, client)
	for _, r := range mine {
		err = e.step(ctx, client, r)
		if err != nil && ctx.Err() == nil {
			e.logger.Warn("rollout step failed", "deployment", r.Deployment, "shape", r.Shape, "rollout", r.Number, "err", err)
		}
	}
}
