// Package policy is the decision logic of the example governor (lxd-deploy governor run):
// how many instances a shape should run, from scale requests, CPU metrics (in the manner of
// Kubernetes' Horizontal Pod Autoscaler) or any Prometheus query (as Nomad Autoscaler's
// target-value strategy). It is pure: no I/O, no clock of its
// own (callers pass the time), so every rule is table-tested and any governor can reuse it.
package policy

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// DefaultTolerance is how far the observed CPU may be from the target, as a fraction of the
// target, before target tracking changes anything (HPA's default).
const DefaultTolerance = 0.1

// Shape is the policy of one shape.
type Shape struct {
	// FollowScaleRequests makes the governor bring the shape to the target of scale requests.
	FollowScaleRequests bool

	// CPUTarget is the mean CPU per instance to track, in cores; 0 turns tracking off.
	CPUTarget float64

	// Tolerance is the band around CPUTarget (a fraction of it) inside which nothing changes.
	Tolerance float64

	// ScaleUpCooldown and ScaleDownCooldown hold target tracking after any scaling action of
	// the shape, separately for each direction.
	ScaleUpCooldown   time.Duration
	ScaleDownCooldown time.Duration

	// ScaleDownStabilization: a scale down goes only to the highest recommendation seen in
	// this window, so a short dip does not shed instances that are needed again a minute later.
	ScaleDownStabilization time.Duration

	// Query is a PromQL query returning one number for the whole shape, and QueryTarget how
	// much of it one instance should carry (query.go); an empty Query turns this off.
	Query       string
	QueryTarget float64

	// RequestsPerInstance is the request rate (requests, or connections for tcp, per second)
	// one instance should carry, read from the front door's figures in the metrics events
	// (requests.go); 0 turns it off.
	RequestsPerInstance float64

	// IdleToZero scales a shape whose scaling_minimum is 0 in to zero instances once its
	// front door has seen no request, open connection or queued request for this long
	// (the traffic figures of the metrics events, doc/traffic.md "Scale to zero"); 0
	// turns it off. The front door wakes the shape at its next request.
	IdleToZero time.Duration

	// MemoryTarget is the share of its memory limit the hungriest instance should use (the
	// vertical mode, vertical.go); 0 turns it off.
	MemoryTarget float64
}

// DefaultShape is the policy of a shape the file does not list: follow scale requests,
// no target tracking.
func DefaultShape() Shape {
	return Shape{FollowScaleRequests: true, Tolerance: DefaultTolerance}
}

// String describes the policy in one line, for logs and policy-check.
func (s Shape) String() string {
	var parts []string
	if s.FollowScaleRequests {
		parts = append(parts, "follows scale requests")
	} else {
		parts = append(parts, "ignores scale requests")
	}

	if s.CPUTarget > 0 {
		parts = append(parts, fmt.Sprintf("cpu target %g cores per instance (tolerance %g%%)", s.CPUTarget, s.Tolerance*100))
		parts = append(parts, fmt.Sprintf("cooldowns up %s down %s", s.ScaleUpCooldown, s.ScaleDownCooldown))
		parts = append(parts, fmt.Sprintf("scale-down stabilization %s", s.ScaleDownStabilization))
	} else if s.Query == "" && s.RequestsPerInstance <= 0 {
		parts = append(parts, "no cpu target tracking")
	}

	if s.RequestsPerInstance > 0 {
		parts = append(parts, fmt.Sprintf("%g requests per second per instance through the front door (tolerance %g%%)", s.RequestsPerInstance, s.Tolerance*100))
		parts = append(parts, fmt.Sprintf("cooldowns up %s down %s", s.ScaleUpCooldown, s.ScaleDownCooldown))
		parts = append(parts, fmt.Sprintf("scale-down stabilization %s", s.ScaleDownStabilization))
	}

	if s.Query != "" {
		parts = append(parts, fmt.Sprintf("query %q with a target of %g per instance (tolerance %g%%)", s.Query, s.QueryTarget, s.Tolerance*100))
		parts = append(parts, fmt.Sprintf("cooldowns up %s down %s", s.ScaleUpCooldown, s.ScaleDownCooldown))
		parts = append(parts, fmt.Sprintf("scale-down stabilization %s", s.ScaleDownStabilization))
	}

	if s.IdleToZero > 0 {
		parts = append(parts, fmt.Sprintf("idle to zero after %s without requests", s.IdleToZero))
	}

	if s.MemoryTarget > 0 {
		parts = append(parts, fmt.Sprintf("memory target %g%% of the limit (resizes within resource_bounds)", s.MemoryTarget*100))
	}

	return strings.Join(parts, ", ")
}

// Policy is a policy file: the policy of each shape by name.
type Policy struct {
	Shapes map[string]Shape
}

// Shape returns the policy of a shape, DefaultShape for a shape the file does not list.
func (p *Policy) Shape(name string) Shape {
	if p != nil {
		s, ok := p.Shapes[name]
		if ok {
			return s
		}
	}

	return DefaultShape()
}

// Names returns the shapes the policy lists, sorted.
func (p *Policy) Names() []string {
	names := make([]string, 0, len(p.Shapes))
	for name := range p.Shapes {
		names = append(names, name)
	}

	sort.Strings(names)
	return names
}

// file is the YAML form of a policy.
type file struct {
	Shapes map[string]fileShape `yaml:"shapes"`
}

type fileShape struct {
	FollowScaleRequests    *bool    `yaml:"follow_scale_requests"`
	CPUTarget              float64  `yaml:"cpu_target"`
	Tolerance              *float64 `yaml:"tolerance"`
	ScaleUpCooldown        duration `yaml:"scale_up_cooldown"`
	ScaleDownCooldown      duration `yaml:"scale_down_cooldown"`
	ScaleDownStabilization duration `yaml:"scale_down_stabilization"`
	MemoryTarget           float64  `yaml:"memory_target"`
	Query                  string   `yaml:"query"`
	QueryTarget            float64  `yaml:"query_target"`
	RequestsPerInstance    float64  `yaml:"requests_per_instance"`
	IdleToZero             duration `yaml:"idle_to_zero"`
}

// duration reads "30s", "2m" or "1h30m". A bare number is refused: yaml.v2 would read it as
// nanoseconds, which nobody means.
type duration time.Duration

func (d *duration) UnmarshalYAML(unmarshal func(any) error) error {
	var raw any
	err := unmarshal(&raw)
	if err != nil {
		return err
	}

	text, ok := raw.(string)
	if !ok {
		return fmt.Errorf("duration %v needs a unit, as in \"30s\" or \"2m\"", raw)
	}

	parsed, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit, as in \"30s\" or \"2m\"", text)
	}

	*d = duration(parsed)
	return nil
}

// Parse reads and checks a policy file. Unknown keys are errors, so that a typo does not
// silently leave a default in place.
func Parse(data []byte) (*Policy, error) {
	var f file
	err := yaml.UnmarshalStrict(data, &f)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}

	p := &Policy{Shapes: make(map[string]Shape, len(f.Shapes))}
	for name, fs := range f.Shapes {
		err := validate.Name("shape", name)
		if err != nil {
			return nil, fmt.Errorf("policy file: %w", err)
		}

		s := DefaultShape()
		if fs.FollowScaleRequests != nil {
			s.FollowScaleRequests = *fs.FollowScaleRequests
		}

		if fs.Tolerance != nil {
			s.Tolerance = *fs.Tolerance
		}

		s.CPUTarget = fs.CPUTarget
		s.ScaleUpCooldown = time.Duration(fs.ScaleUpCooldown)
		s.ScaleDownCooldown = time.Duration(fs.ScaleDownCooldown)
		s.ScaleDownStabilization = time.Duration(fs.ScaleDownStabilization)
		s.MemoryTarget = fs.MemoryTarget
		s.Query = strings.TrimSpace(fs.Query)
		s.QueryTarget = fs.QueryTarget
		s.RequestsPerInstance = fs.RequestsPerInstance
		s.IdleToZero = time.Duration(fs.IdleToZero)

		err = s.Validate()
		if err != nil {
			return nil, fmt.Errorf("policy file: shape %s: %w", name, err)
		}

		p.Shapes[name] = s
	}

	return p, nil
}

// Validate checks the values of a shape's policy.
func (s Shape) Validate() error {
	if math.IsNaN(s.CPUTarget) || math.IsInf(s.CPUTarget, 0) || s.CPUTarget < 0 {
		return fmt.Errorf("cpu_target must be 0 (off) or a positive number of cores, got %g", s.CPUTarget)
	}

	if math.IsNaN(s.QueryTarget) || math.IsInf(s.QueryTarget, 0) || s.QueryTarget < 0 {
		return fmt.Errorf("query_target must be a positive number (how much of the query's value one instance carries), got %g", s.QueryTarget)
	}

	switch {
	case s.Query != "" && s.QueryTarget == 0:
		return errors.New("query needs a query_target: how much of the query's value one instance should carry, such as 100 (requests per second)")
	case s.Query == "" && s.QueryTarget != 0:
		return errors.New("query_target needs a query: a PromQL query returning one number for the shape, such as 'sum(rate(http_requests_total{shape=\"web\"}[1m]))'")
	case s.Query != "" && s.CPUTarget > 0:
		// Two signals would share one stabilization window and fight: one scales up, the
		// other scales down once the window has passed.
		return errors.New("cpu_target and query are exclusive: track one signal per shape (a query can read CPU from Prometheus too)")
	}

	if math.IsNaN(s.RequestsPerInstance) || math.IsInf(s.RequestsPerInstance, 0) || s.RequestsPerInstance < 0 {
		return fmt.Errorf("requests_per_instance must be 0 (off) or a positive request rate per instance, such as 50 (requests per second), got %g", s.RequestsPerInstance)
	}

	if s.RequestsPerInstance > 0 && (s.CPUTarget > 0 || s.Query != "") {
		// As for cpu_target and query: one signal per shape, or they fight over one window.
		return errors.New("requests_per_instance, cpu_target and query are exclusive: track one signal per shape")
	}

	if math.IsNaN(s.MemoryTarget) || s.MemoryTarget < 0 || s.MemoryTarget > 1 {
		return fmt.Errorf("memory_target must be 0 (off) or a share of the memory limit up to 1, such as 0.7, got %g", s.MemoryTarget)
	}

	if math.IsNaN(s.Tolerance) || s.Tolerance < 0 || s.Tolerance >= 1 {
		return fmt.Errorf("tolerance must be at least 0 and below 1 (a fraction of cpu_target, query_target or requests_per_instance), got %g", s.Tolerance)
	}

	for _, d := range []struct {
		key   string
		value time.Duration
	}{
		{"scale_up_cooldown", s.ScaleUpCooldown},
		{"scale_down_cooldown", s.ScaleDownCooldown},
		{"scale_down_stabilization", s.ScaleDownStabilization},
		{"idle_to_zero", s.IdleToZero},
	} {
		if d.value < 0 {
			return fmt.Errorf("%s must not be negative, got %s", d.key, d.value)
		}
	}

	return nil
}
