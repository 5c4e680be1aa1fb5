package reporter

import "github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"

// Wakes are the loops a change wakes (Waker): the rollout engine's, the image-change
// trigger's and the warm pools'. The daemon makes them before the reporter and the engines
// and hands the same ones to both, so that neither needs the other.
type Wakes struct {
	Rollouts loop.Loop
	Images   loop.Loop
	Pools    loop.Loop
}

// NewWakes makes the loops, each able to be poked.
func NewWakes() Wakes {
	return Wakes{Rollouts: loop.New(), Images: loop.New(), Pools: loop.New()}
}

// WakeRollouts implements Waker.
func (w Wakes) WakeRollouts() { w.Rollouts.Poke() }

// WatchImages implements Waker.
func (w Wakes) WatchImages() { w.Images.Poke() }

// RefillPools implements Waker.
func (w Wakes) RefillPools() { w.Pools.Poke() }
