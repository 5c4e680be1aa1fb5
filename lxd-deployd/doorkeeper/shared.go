package doorkeeper

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
)

// A shared door (doc/traffic.md, "In a cluster of daemons") is one load balancer several
// members of a cluster reach: an operator's HAProxy. Its driver is the holder of a lease
// named after it; the other members follow it: they compute the same endpoints and send
// the same events, read the door's figures (metrics, a drain's wait) and change nothing
// in it. When the driver dies another member takes the lease within lease.DefaultTTL and
// applies the whole picture at once; meanwhile the door serves its last picture, its own
// checks taking out instances that go. Several drivers would each apply the picture of
// their own last round: one a round behind puts back a server the other just drained or
// removed, and their runtime commands interleave.
//
// A private door is never shared: it is its member's own HAProxy, on its host, reached
// through a socket in that member's data directory.

// Leases runs a job while this member holds a lease (*lease.Manager).
type Leases interface {
	Run(ctx context.Context, name string, job func(ctx context.Context, held lease.Lease))
}

// Shared says the keeper's door is shared: only the holder of Lease drives it.
type Shared struct {
	Leases Leases
	// Lease names the door (SharedLease).
	Lease string
}

// SharedLease is the lease of the operator's HAProxy at adminSocket: a unix socket is the
// one on this host (members beside one HAProxy on one host share its lease, members on
// other hosts drive their own), any other address is the same HAProxy from every member.
func SharedLease(adminSocket string) string {
	if strings.Contains(adminSocket, "/") {
		host, err := os.Hostname()
		if err != nil {
			host = "localhost"
		}

		return "front-door/" + host + ":" + adminSocket
	}

	return "front-door/" + adminSocket
}

// StepDownAfter is how long a driver's changes to a shared door may fail before it hands
// the door's lease over: a member that cannot reach the door (its admin socket over a
// network it is cut from) must not keep one that reaches it from driving.
const StepDownAfter = lease.DefaultTTL

// drive is the lease's job: the keeper drives the door until ctx ends (the lease is lost
// or about to expire, or the daemon stops) or it steps down, starting with the whole
// picture. A member that stepped down lately lets the lease go at once, for another to try.
func (k *Keeper) drive(ctx context.Context, held lease.Lease) {
	k.mu.Lock()
	recent := !k.steppedDownAt.IsZero() && k.now().Sub(k.steppedDownAt) < 3*StepDownAfter
	k.mu.Unlock()
	if recent {
		return
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k.setDriver(ctx, cancel)
	k.logger.Info("front door: this member drives the shared door", "lease", held.Name, "token", held.Token)
	k.Poke()
	<-ctx.Done()
	k.setDriver(nil, nil)
	k.logger.Info("front door: this member no longer drives the shared door", "lease", held.Name)
}

// setDriver records the context this member drives the door under (nil: it follows), and
// forgets what it applied: a new driver gives the door the whole picture at once, and a
// follower judges drains by the door's own word.
func (k *Keeper) setDriver(ctx context.Context, stepDown context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.driver, k.stepDown, k.failingSince = ctx, stepDown, time.Time{}
	k.applied, k.outSince, k.appliedAt = map[string]map[string]string{}, map[string]map[string]time.Time{}, time.Time{}
}

// driveResult notes how a driver's Apply went; once they have failed for StepDownAfter
// this member gives up the shared door's lease.
func (k *Keeper) driveResult(err error) {
	if k.shared == nil {
		return
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.failingSince = time.Time{}
		return
	}

	now := k.now()
	if k.failingSince.IsZero() {
		k.failingSince = now
	}

	if now.Sub(k.failingSince) < StepDownAfter || k.stepDown == nil {
		return
	}

	k.logger.Warn("front door: this member cannot change the shared door, so it hands the door's lease over for another member to drive it", "for", now.Sub(k.failingSince).Round(time.Second), "err", err)
	k.steppedDownAt = now
	k.stepDown()
	k.stepDown = nil
}

// driving returns the context to change the door under, or nil when this member follows
// a shared door another member drives. A private door is always driven, under ctx.
func (k *Keeper) driving(ctx context.Context) context.Context {
	if k.shared == nil {
		return ctx
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.driver == nil || k.driver.Err() != nil {
		return nil
	}

	return k.driver
}

// follow reads a shared door another member drives: the frontends' figures, which the
// metrics and the drains of this member's deletes read.
func (k *Keeper) follow(ctx context.Context, frontends []frontdoor.Frontend) error {
	follower, ok := k.door.(frontdoor.Follower)
	if !ok {
		return nil
	}

	err := follower.Follow(ctx, frontends)
	if err != nil {
		return err
	}

	stats, err := k.door.Stats(ctx)
	if err != nil {
		return err
	}

	k.mu.Lock()
	k.stats, k.statsAt = stats, k.now()
	k.mu.Unlock()
	return nil
}

// drainedByDoor is a follower's Drained (k.mu held): the door's last figures show the
// instance's server out by its admin state (the driver drained it) with no open
// connection. Out of the figures (never added, gone, or no figures yet) it is not known
// drained: the delete waits for its drain timeout.
func (k *Keeper) drainedByDoor(key string, instance string) bool {
	s, ok := k.stats[key].Servers[instance]
	return ok && s.Out && s.Sessions == 0
}
