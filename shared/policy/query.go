package policy

import (
	"fmt"
	"math"
	"time"
)

// Target tracking on any Prometheus query, as Nomad Autoscaler's target-value strategy does
// it: the shape's query returns one number for the whole shape (requests per second, queue
// length, ...) and query_target is how much of it one instance should carry, so
//
//	desired = ceil(value / query_target)
//
// then the tolerance, the stabilization window, the bounds and the cooldowns, as for CPU.

// Query is the kind of an input made from the value of the shape's query. It is no webhook
// event: the governor polls Prometheus itself.
const Query Kind = "query"

// QueryInput turns the value of a shape's query into an input; the size and bounds come from
// the shape as the governor API reports it.
func QueryInput(value float64, current int, minimum int, maximum int) Input {
	return Input{Kind: Query, Current: current, Minimum: minimum, Maximum: maximum, Value: value}
}

// query decides from the value of the shape's query. A value that is no usable number (NaN,
// infinite, negative: a division by zero, a counter read as a gauge) changes nothing, as a
// query that fails or returns no data does (the governor does not even ask then). Inside the
// tolerance, taken on the load per instance against query_target as for CPU, nothing
// changes; a shape with no instance has no load per instance, so any value asks for
// ceil(value / query_target) of them.
func (s *State) query(now time.Time, in Input) Decision {
	target := s.Policy.QueryTarget
	if s.Policy.Query == "" || target <= 0 {
		return hold(in, "query target tracking is off for this shape")
	}

	value := in.Value
	if math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
		return hold(in, fmt.Sprintf("no change: the query returned %g, not a load (a number from 0 up)", value))
	}

	why := fmt.Sprintf("query value %.4g for a target of %.4g per instance", value, target)
	return s.perInstance(now, in, value, target, why)
}

// perInstance is target tracking on a load of the whole shape (a query's value, the front
// door's request rate) of which one instance should carry target: inside the tolerance,
// taken on the load per instance, nothing changes; otherwise ceil(value / target)
// instances, then settle (stabilization, bounds, cooldowns). A shape with no instance has
// no load per instance, so any value asks for ceil(value / target) of them.
func (s *State) perInstance(now time.Time, in Input, value float64, target float64, why string) Decision {
	raw := in.Current
	if in.Current > 0 {
		perInstance := value / float64(in.Current)
		why += fmt.Sprintf(" (%.4g per instance of %d)", perInstance, in.Current)
		if math.Abs(perInstance/target-1) <= s.Policy.Tolerance+epsilon {
			return s.settle(now, in, raw, "within tolerance: "+why)
		}
	}

	raw = int(math.Ceil(value/target - epsilon))
	return s.settle(now, in, raw, why)
}
