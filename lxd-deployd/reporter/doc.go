// Package reporter tells what the daemon did: LXD lifecycle events on /1.0/events (with one
// log line each), webhook events for a deployment's governor, and the count of rollouts that
// ended.
//
// The lifecycle actions are typed, in LXD's "<object>-<verb>" style (DeploymentAction,
// KeyAction, ManifestAction, ShapeAction, InstanceAction, RolloutAction), and each builds its
// own event from a ref, URL included, as canonical/lxd's lxd/lifecycle package does: no
// caller writes a source URL by hand.
//
// The daemon has one *Reporter, built when it is wired (wire.go). It holds no pointer to
// any engine: the loops a change wakes (rollouts, the image trigger, warm pools) are a Waker
// set on it once, and the engines see it through interfaces they declare themselves
// (fleet.Reporter, rollout.Reporter).
package reporter
