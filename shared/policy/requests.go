package policy

import (
	"fmt"
	"math"
	"time"
)

// Target tracking on requests per instance, as AWS's ALBRequestCountPerTarget does it: the
// shape's front door reports its request rate in each metrics event (traffic.request_rate,
// doc/traffic.md), and requests_per_instance is how much of it one instance should carry,
// so
//
//	desired = ceil(request_rate / requests_per_instance)
//
// then the tolerance, the stabilization window, the bounds and the cooldowns, as for CPU and
// a query (perInstance, settle).

// requests decides from the front door's request rate. Metrics without front door figures
// (a shape with no traffic, a door whose statistics could not be read) change nothing and
// say so, as a query that returns no data does: no decision, and no recommendation kept by
// the stabilization window.
func (s *State) requests(now time.Time, in Input) Decision {
	target := s.Policy.RequestsPerInstance
	if in.Traffic == nil {
		return hold(in, "no traffic data: no change (the metrics carry no front door figures; does the shape have a traffic object, and is its front door up?)")
	}

	rate := in.Traffic.RequestRate
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return hold(in, fmt.Sprintf("no traffic data: no change (the front door reported a request rate of %g)", rate))
	}

	why := fmt.Sprintf("request rate %.4g/s for a target of %.4g per instance", rate, target)
	d := s.perInstance(now, in, rate, target, why)
	if d.Desired == 0 && in.Current > 0 {
		// Zero instances is idle_to_zero's to decide: it waits for the door to be idle
		// (no request, connection nor queue) long enough, and the door wakes the shape.
		// A rate of 0 over one second is not that.
		d.Desired, d.Recommended = 1, 1
		d.Why += "; kept at 1: scaling to zero is idle_to_zero's"
	}

	return d
}
