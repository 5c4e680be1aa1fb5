package validate

import (
	"fmt"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Limits of the health, hooks and warm_pool objects of a shape. They keep a typo (1ms
// intervals, a 1000-instance pool) from turning into load on LXD.
const (
	healthIntervalMin  = time.Second
	healthIntervalMax  = time.Hour
	healthTimeoutMin   = 100 * time.Millisecond
	healthGraceMax     = time.Hour
	healthThresholdMax = 100
	hookTimeoutMax     = 48 * time.Hour
	warmPoolMax        = 100

	// healthReplacementLimitMax bounds health.replacement_limit.
	healthReplacementLimitMax = 10000

	// healthReportOutputMax is what the daemon keeps of a check's output (health.OutputLimit).
	healthReportOutputMax = 1024
)

// ShapeLifecycle checks a shape's health, hooks and warm_pool objects (each may be absent).
func ShapeLifecycle(put api.DeploymentShapePut) error {
	err := ShapeHealth(put.Health)
	if err != nil {
		return err
	}

	err = ShapeHooks(put.Hooks)
	if err != nil {
		return err
	}

	return ShapeWarmPool(put.WarmPool)
}

// ShapeHealth checks a health object: a command, durations as strings within bounds,
// thresholds and a replacement budget of at least one.
func ShapeHealth(h *api.DeploymentShapeHealth) error {
	if h == nil {
		return nil
	}

	err := healthKind(h)
	if err != nil {
		return err
	}

	checks := []struct {
		field string
		value string
		low   time.Duration
		high  time.Duration
	}{
		{"health.interval", h.Interval, healthIntervalMin, healthIntervalMax},
		{"health.timeout", h.Timeout, healthTimeoutMin, healthIntervalMax},
		{"health.grace", h.Grace, 0, healthGraceMax},
		{"health.ttl", h.TTL, healthIntervalMin, healthIntervalMax},
		{"health.replacement_window", h.ReplacementWindow, time.Minute, 24 * time.Hour},
	}

	for _, c := range checks {
		err := optionalDuration(c.field, c.value, c.low, c.high)
		if err != nil {
			return err
		}
	}

	for field, n := range map[string]int{"health.healthy_threshold": h.HealthyThreshold, "health.unhealthy_threshold": h.UnhealthyThreshold} {
		if n < 0 || n > healthThresholdMax {
			return fmt.Errorf("%s must be from 1 to %d (0 or absent for the default), got %d", field, healthThresholdMax, n)
		}
	}

	if h.MaxUnavailable < 0 {
		return fmt.Errorf("health.max_unavailable must be 1 or more (0 or absent for the default 1), got %d", h.MaxUnavailable)
	}

	// NaN and infinities fail both comparisons' negations: refused too.
	if !(h.HoldShare >= 0 && h.HoldShare <= 1) {
		return fmt.Errorf("health.hold_share must be a share from 0 to 1 (0 or absent for the default 0.5, 1 to never hold autohealing), got %v", h.HoldShare)
	}

	if h.ReplacementLimit < 0 || h.ReplacementLimit > healthReplacementLimitMax {
		return fmt.Errorf("health.replacement_limit must be from 1 to %d (0 or absent for the default 10), got %d", healthReplacementLimitMax, h.ReplacementLimit)
	}

	return nil
}

// ShapeHooks checks a hooks object.
func ShapeHooks(h *api.DeploymentShapeHooks) error {
	if h == nil {
		return nil
	}

	for field, value := range map[string]string{"hooks.terminate_timeout": h.TerminateTimeout, "hooks.launch_timeout": h.LaunchTimeout} {
		err := optionalDuration(field, value, 0, hookTimeoutMax)
		if err != nil {
			return err
		}
	}

	switch h.DefaultAction {
	case "", api.LifecycleActionContinue, api.LifecycleActionAbandon:
	default:
		return fmt.Errorf("hooks.default_action must be %q or %q, got %q", api.LifecycleActionContinue, api.LifecycleActionAbandon, h.DefaultAction)
	}

	return nil
}

// ShapeWarmPool checks a warm_pool object.
func ShapeWarmPool(w *api.DeploymentShapeWarmPool) error {
	if w == nil {
		return nil
	}

	if w.Size < 0 || w.Size > warmPoolMax {
		return fmt.Errorf("warm_pool.size must be from 0 to %d, got %d", warmPoolMax, w.Size)
	}

	if w.State != "" && w.State != "stopped" {
		return fmt.Errorf("warm_pool.state %q is not supported: pool instances wait stopped (leave it empty or use \"stopped\")", w.State)
	}

	return nil
}

// optionalDuration accepts an empty value (the default) or a duration in [low, high].
func optionalDuration(field string, value string, low time.Duration, high time.Duration) error {
	if value == "" {
		return nil
	}

	d, err := time.ParseDuration(value)
	if err != nil || d < low || d > high {
		return fmt.Errorf("%s must be a duration such as 10s or 5m, from %s to %s, got %q", field, low, high, value)
	}

	return nil
}

// healthKind checks that exactly one kind of check is set, and that one.
func healthKind(h *api.DeploymentShapeHealth) error {
	kinds := 0
	for _, set := range []bool{len(h.Command) > 0, h.TTL != "", h.HTTP != nil, h.TCP != nil} {
		if set {
			kinds++
		}
	}

	if kinds != 1 {
		return fmt.Errorf("health must set exactly one of health.command (exec), health.ttl, health.http and health.tcp, got %d, e.g. health.command [\"test\", \"-f\", \"/run/ready\"]", kinds)
	}

	switch {
	case len(h.Command) > 0 && h.Command[0] == "":
		return fmt.Errorf("health.command must name the program to run inside the instance, e.g. [\"test\", \"-f\", \"/run/ready\"]")
	case len(h.Command) > 0 && strings.ContainsAny(h.Command[0], " \t\r\n"):
		// LXD runs argv without a shell: ["sh -c true"] looks for a program named so, and
		// the check could start on no instance.
		return fmt.Errorf("health.command is argv, run without a shell: its first item %q names no program; split it, e.g. %q, or run a shell: [\"sh\", \"-c\", %q]", h.Command[0], strings.Fields(h.Command[0]), strings.Join(h.Command, " "))
	case h.HTTP != nil:
		if h.HTTP.Path != "" && (!strings.HasPrefix(h.HTTP.Path, "/") || strings.ContainsAny(h.HTTP.Path, " \t\r\n#")) {
			return fmt.Errorf("health.http.path must be an absolute path such as /healthz, got %q", h.HTTP.Path)
		}

		return healthPort("health.http.port", h.HTTP.Port)
	case h.TCP != nil:
		return healthPort("health.tcp.port", h.TCP.Port)
	}

	return nil
}

func healthPort(field string, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("%s must be from 1 to 65535, got %d", field, port)
	}

	return nil
}

// HealthReport checks the body of PUT .../instances/{instance}/health.
func HealthReport(put api.DeploymentInstanceHealthPut) error {
	if put.Status != api.HealthReportPassing && put.Status != api.HealthReportFailing {
		return fmt.Errorf("status must be passing or failing, got %q", put.Status)
	}

	if len(put.Output) > healthReportOutputMax {
		return fmt.Errorf("output must be at most %d bytes, got %d: keep the detail elsewhere", healthReportOutputMax, len(put.Output))
	}

	return nil
}
