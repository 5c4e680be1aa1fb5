package doorkeeper

import (
	"net"
	"strconv"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Scale to zero (doc/traffic.md): a shape with scaling_minimum 0 and a private front door
// gets a hold, the door's backup server, which keeps the connections that arrive while no
// instance is up and asks for capacity at the first one (Wake).

// Wake asks for capacity for a shape whose hold has connections waiting and no serving
// instance: the daemon sends its governor a scale request (Waker.Wake).
// waiting says how many wait now: read when the request is made, it counts the rest of a
// burst whose first connection woke the shape.
type Wake func(shape ObservedShape, waiting func() int)

// HoldSpecs lists the holds the shapes want: those that may go to zero (scaling_minimum
// 0) behind a door of the daemon's own (listen), each with its serving instances as
// targets. A pure function.
func HoldSpecs(shapes map[string]ObservedShape, endpoints map[string][]api.DeploymentShapeEndpoint) []waker.Spec {
	specs := []waker.Spec{}
	for key, s := range shapes {
		t := s.Shape.Traffic
		if t == nil || t.Listen == "" || s.Shape.ScalingMinimum != 0 {
			continue
		}

		max, timeout, err := validate.TrafficHold(t)
		if err != nil {
			// Checked when stored; a value from before the check gets the defaults.
			max, timeout, _ = validate.TrafficHold(&api.DeploymentShapeTraffic{})
		}

		protocol := t.Protocol
		if protocol == "" {
			protocol = api.TrafficProtocolHTTP
		}

		spec := waker.Spec{Key: key, Protocol: protocol, Max: max, Timeout: timeout, Targets: []string{}}
		for _, e := range endpoints[key] {
			if e.State == api.EndpointServing && e.Address != "" {
				spec.Targets = append(spec.Targets, net.JoinHostPort(e.Address, strconv.Itoa(e.Port)))
			}
		}

		specs = append(specs, spec)
	}

	return specs
}

// syncHolds brings the holds in step with the shapes and sets each frontend's Hold; it
// says whether any hold came, went or moved since the last round (the door must be told).
func (k *Keeper) syncHolds(shapes map[string]ObservedShape, endpoints map[string][]api.DeploymentShapeEndpoint, frontends []frontdoor.Frontend) bool {
	if k.holds == nil {
		return false
	}

	// A hold's first connection may wake before the round ends: it finds its shape.
	k.mu.Lock()
	for key, s := range shapes {
		k.shapes[key] = s
	}

	k.mu.Unlock()
	at := k.holds.Sync(HoldSpecs(shapes, endpoints))
	for i := range frontends {
		frontends[i].Hold = at[frontends[i].Key]
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	moved := len(at) != len(k.holdAt)
	for key, addr := range at {
		if k.holdAt[key] != addr {
			moved = true
		}
	}

	k.holdAt = at
	return moved
}

// wakeFor turns a hold's wake (by frontdoor key) into a Wake of its shape.
func (k *Keeper) wakeFor(wake Wake) func(key string, waiting int) {
	return func(key string, waiting int) {
		k.mu.Lock()
		s, ok := k.shapes[key]
		k.mu.Unlock()
		if !ok || wake == nil {
			k.logger.Warn("front door: connections wait for a shape the keeper does not know", "shape", key, "waiting", waiting)
			return
		}

		wake(s, func() int { return max(waiting, k.holds.Pending(key)) })
	}
}
