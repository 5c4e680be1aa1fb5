package api

import (
	"encoding/json"
	"time"
)

// Resource keys a resize changes and resource_bounds bound.
const (
	LimitCPU    = "limits.cpu"
	LimitMemory = "limits.memory"
)

// DeploymentShapeResourceBound is the range a resize may move one LXD limit in.
type DeploymentShapeResourceBound struct {
	// Lowest value (LXD's units: a CPU count, or a byte size such as 64MiB; empty for none)
	// Example: 64MiB
	Minimum string `json:"minimum,omitempty" yaml:"minimum,omitempty"`

	// Highest value (LXD's units; empty for none)
	// Example: 2GiB
	Maximum string `json:"maximum,omitempty" yaml:"maximum,omitempty"`
}

// DeploymentShapeResourceBounds are a shape's resource bounds by LXD limit key.
type DeploymentShapeResourceBounds map[string]DeploymentShapeResourceBound

// UnmarshalJSON merges into the bounds already there, as decoding does into a struct: a
// PATCH of {"limits.memory": {"maximum": "2GiB"}} keeps that bound's minimum (encoding/json
// would replace the whole entry). A null entry removes the bound.
func (b *DeploymentShapeResourceBounds) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	err := json.Unmarshal(data, &raw)
	if err != nil {
		return err
	}

	if raw == nil {
		*b = nil
		return nil
	}

	if *b == nil {
		*b = DeploymentShapeResourceBounds{}
	}

	for key, value := range raw {
		if string(value) == "null" {
			delete(*b, key)
			continue
		}

		bound := (*b)[key]
		err = json.Unmarshal(value, &bound)
		if err != nil {
			return err
		}

		(*b)[key] = bound
	}

	return nil
}

// DeploymentShapeResourcesPut is a resize: new limits for a shape's instances, applied live
// (PUT /1.0/deployments/{d}/shapes/{s}/resources). An empty field leaves that limit as is.
type DeploymentShapeResourcesPut struct {
	// CPU count
	// Example: 2
	CPU string `json:"limits.cpu,omitempty" yaml:"limits.cpu,omitempty"`

	// Memory limit (an absolute size)
	// Example: 512MiB
	Memory string `json:"limits.memory,omitempty" yaml:"limits.memory,omitempty"`

	// Why, recorded in the revision and the activity log
	// Example: memory utilisation 92%
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Limits returns the limits the resize sets, by LXD key.
func (r DeploymentShapeResourcesPut) Limits() map[string]string {
	out := map[string]string{}
	if r.CPU != "" {
		out[LimitCPU] = r.CPU
	}

	if r.Memory != "" {
		out[LimitMemory] = r.Memory
	}

	return out
}

// Results of a resize for one instance (the operation's metadata, the activity log).
const (
	ResizeApplied = "applied"
	ResizeRefused = "refused"
	ResizeFailed  = "failed"
	ResizeSkipped = "skipped"
)

// DeploymentResizeResult is what a resize did to one instance.
type DeploymentResizeResult struct {
	// applied, refused (left outdated, retried), failed or skipped
	// Example: refused
	Result string `json:"result" yaml:"result"`

	// Why it was refused, failed or skipped
	// Example: memory usage 104MiB plus margin 16MiB is above the new limit 64MiB
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`

	// Limits the instance runs with afterwards
	// Example: {"limits.memory": "256MiB"}
	Limits map[string]string `json:"limits,omitempty" yaml:"limits,omitempty"`
}

// DeploymentInstanceUsage is what an instance uses, as LXD's /1.0/metrics reports it.
type DeploymentInstanceUsage struct {
	// Total CPU time used, in seconds
	// Example: 12.5
	CPUSeconds float64 `json:"cpu_seconds" yaml:"cpu_seconds"`

	// Memory in use (MemTotal - MemAvailable as the instance sees it), in bytes
	// Example: 104857600
	MemoryUsageBytes int64 `json:"memory_usage_bytes" yaml:"memory_usage_bytes"`

	// Memory the instance sees (its limit), in bytes
	// Example: 268435456
	MemoryLimitBytes int64 `json:"memory_limit_bytes" yaml:"memory_limit_bytes"`

	// When the daemon fetched these figures from LXD (LXD's own may be up to its metrics
	// cache lifetime older: 8 s in LXD 5.0)
	// Example: 2026-11-25T01:00:00Z
	SampledAt *time.Time `json:"sampled_at,omitempty" yaml:"sampled_at,omitempty"`
}
