package validate

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Rollout defaults (doc/api.md).
const (
	DefaultProgressDeadline = 10 * time.Minute
	DefaultMaxSurge         = "1"
	DefaultMaxUnavailable   = "0"
)

// RolloutCount parses a count ("2") or a percentage ("25%"); percent says which.
func RolloutCount(field string, c api.RolloutCount) (n int, percent bool, err error) {
	s := string(c)
	digits := strings.TrimSuffix(s, "%")
	percent = digits != s
	n, err = strconv.Atoi(digits)
	if err != nil || n < 0 || (percent && n > 100) {
		return 0, false, fmt.Errorf("rollout.%s %q must be a whole number of instances (2) or a percentage of the size from 0%% to 100%% (\"25%%\")", field, s)
	}

	return n, percent, nil
}

// RolloutDuration parses one of a rollout's durations; empty gives def.
func RolloutDuration(field string, value string, def time.Duration) (time.Duration, error) {
	if value == "" {
		return def, nil
	}

	d, err := time.ParseDuration(value)
	if err != nil || d < 0 || d > 24*time.Hour {
		return 0, fmt.Errorf("rollout.%s %q must be a duration such as 30s or 10m, at most 24h", field, value)
	}

	return d, nil
}

// Rollout checks a shape's rollout settings.
func Rollout(r api.DeploymentShapeRollout) error {
	switch r.Strategy {
	case "", api.RolloutRolling, api.RolloutRecreate, api.RolloutCanary, api.RolloutCustom:
	default:
		return fmt.Errorf("rollout.strategy %q is not known: use rolling, recreate, canary or custom", r.Strategy)
	}

	err := RolloutCustom(r)
	if err != nil {
		return err
	}

	switch r.Trigger {
	case "", api.RolloutTriggerManual, api.RolloutTriggerConfigChange, api.RolloutTriggerImageChange:
	default:
		return fmt.Errorf("rollout.trigger %q is not known: use manual, config-change or image-change", r.Trigger)
	}

	err = triggers(r)
	if err != nil {
		return err
	}

	surge, unavailable := r.MaxSurge, r.MaxUnavailable
	if surge == "" {
		surge = DefaultMaxSurge
	}

	if unavailable == "" {
		unavailable = DefaultMaxUnavailable
	}

	s, _, err := RolloutCount("max_surge", surge)
	if err != nil {
		return err
	}

	u, _, err := RolloutCount("max_unavailable", unavailable)
	if err != nil {
		return err
	}

	if s == 0 && u == 0 {
		return fmt.Errorf("rollout.max_surge and rollout.max_unavailable are both 0, so no instance could ever be replaced: raise one of them")
	}

	_, err = RolloutDuration("min_ready", r.MinReady, 0)
	if err != nil {
		return err
	}

	d, err := RolloutDuration("progress_deadline", r.ProgressDeadline, DefaultProgressDeadline)
	if err != nil {
		return err
	}

	if d < time.Second {
		return fmt.Errorf("rollout.progress_deadline %q is too short: give at least 1s", r.ProgressDeadline)
	}

	if r.Canary != nil {
		if r.Strategy != api.RolloutCanary {
			return fmt.Errorf("rollout.canary is for the canary strategy: set rollout.strategy to canary or drop rollout.canary")
		}

		if r.Canary.Count < 0 {
			return fmt.Errorf("rollout.canary.count %d must not be negative", r.Canary.Count)
		}
	}

	return nil
}

// triggers checks rollout.triggers: known types, each once, automatic only on image-change,
// and not beside a trigger other than manual (one way to say it).
func triggers(r api.DeploymentShapeRollout) error {
	if len(r.Triggers) == 0 {
		return nil
	}

	if r.Trigger != "" && r.Trigger != api.RolloutTriggerManual {
		return fmt.Errorf("rollout.trigger %q and rollout.triggers are both set: list every trigger in triggers and drop trigger", r.Trigger)
	}

	seen := map[string]bool{}
	for i, t := range r.Triggers {
		switch t.Type {
		case api.RolloutTriggerConfigChange, api.RolloutTriggerImageChange:
		default:
			return fmt.Errorf("rollout.triggers[%d].type %q is not known: use config-change or image-change (no triggers is manual)", i, t.Type)
		}

		if seen[t.Type] {
			return fmt.Errorf("rollout.triggers lists %s twice: list each type once", t.Type)
		}

		seen[t.Type] = true
		if t.Automatic != nil && t.Type != api.RolloutTriggerImageChange {
			return fmt.Errorf("rollout.triggers[%d]: automatic applies to image-change only: drop it from %s", i, t.Type)
		}
	}

	return nil
}
