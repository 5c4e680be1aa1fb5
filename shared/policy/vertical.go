package policy

import (
	"fmt"
	"math"

	"github.com/canonical/lxd/shared/units"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// The vertical mode: besides how many instances a shape has (the horizontal mode above),
// how big they are. With memory_target set, the governor resizes the shape's limits.memory
// so that its hungriest running instance uses about that share of its limit, within the
// shape's resource_bounds (doc/governors.md).

// mib is the unit a vertical decision rounds memory limits up to.
const mib = 1 << 20

// MemoryDecision is the outcome of DecideMemory: the limit to resize to ("" for none) and
// why, in words for the log and the resize's reason.
type MemoryDecision struct {
	Limit string
	Why   string
}

// DecideMemory decides a shape's memory limit from one metrics event: the peak memory use
// of its running instances divided by the policy's memory_target, rounded up to a MiB and
// clamped to the shape's resource_bounds. Within the tolerance of the current limit (the
// template's limits.memory) nothing changes. Shrinking below what an instance uses is safe
// to ask: lxd-deployd leaves that instance at its limit (doc/api.md, safe shrink).
func DecideMemory(p Shape, m api.WebhookShapeMetrics, current string, bound api.DeploymentShapeResourceBound) MemoryDecision {
	if p.MemoryTarget <= 0 {
		return MemoryDecision{Why: "no memory target"}
	}

	var peak int64
	running := 0
	for _, instance := range m.Instances {
		if instance.Status != "Running" {
			continue
		}

		running++
		peak = max(peak, instance.MemoryUsageBytes)
	}

	if running == 0 || peak <= 0 {
		return MemoryDecision{Why: "no running instance reported memory use"}
	}

	desired := int64(math.Ceil(float64(peak)/p.MemoryTarget/mib)) * mib
	why := fmt.Sprintf("peak memory use %s for a target of %g%%", units.GetByteSizeStringIEC(peak, 0), p.MemoryTarget*100)
	if bound.Minimum != "" {
		low, err := validate.ParseResource(api.LimitMemory, bound.Minimum)
		if err == nil && desired < low {
			desired, why = low, why+", raised to the minimum "+bound.Minimum
		}
	}

	if bound.Maximum != "" {
		high, err := validate.ParseResource(api.LimitMemory, bound.Maximum)
		if err == nil && desired > high {
			desired, why = high, why+", held at the maximum "+bound.Maximum
		}
	}

	if current != "" {
		now, err := validate.ParseResource(api.LimitMemory, current)
		if err == nil && math.Abs(float64(desired-now)) <= p.Tolerance*float64(now) {
			return MemoryDecision{Why: why + ": within tolerance of " + current}
		}
	}

	return MemoryDecision{Limit: fmt.Sprintf("%dMiB", desired/mib), Why: why}
}
