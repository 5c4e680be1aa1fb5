// Package health runs a shape's health checks on its instances (LXD exec), keeps each
// instance's verdict in the database, and tells the daemon when one changes. A check never
// runs in a request: the API only reads the recorded verdicts.
package health

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Defaults of a health object's optional fields, as doc/api.md lists them.
const (
	DefaultInterval           = 10 * time.Second
	DefaultTimeout            = 5 * time.Second
	DefaultGrace              = 30 * time.Second
	DefaultHealthyThreshold   = 1
	DefaultUnhealthyThreshold = 3
	DefaultMaxUnavailable     = 1
	DefaultHoldShare          = 0.5
	DefaultReplacementLimit   = 10
	DefaultReplacementWindow  = 10 * time.Minute

	// OutputLimit is how much of a check's output is kept.
	OutputLimit = 1024
)

// Settings is a health object with its defaults filled in and durations parsed.
type Settings struct {
	// Kind is api.HealthKindExec, ttl, http or tcp; the fields of the others are zero.
	Kind               string
	Command            []string
	TTL                time.Duration
	Port               int
	Path               string
	Interval           time.Duration
	Timeout            time.Duration
	Grace              time.Duration
	HealthyThreshold   int
	UnhealthyThreshold int
	Replace            bool
	MaxUnavailable     int
	HoldShare          float64
	ReplacementLimit   int
	ReplacementWindow  time.Duration
}

// Parse fills in the defaults of a validated health object; ok is false when there is none.
func Parse(h *api.DeploymentShapeHealth) (Settings, bool) {
	if h == nil {
		return Settings{}, false
	}

	s := Settings{
		Command:            h.Command,
		Interval:           duration(h.Interval, DefaultInterval),
		Timeout:            duration(h.Timeout, DefaultTimeout),
		Grace:              duration(h.Grace, DefaultGrace),
		HealthyThreshold:   orDefault(h.HealthyThreshold, DefaultHealthyThreshold),
		UnhealthyThreshold: orDefault(h.UnhealthyThreshold, DefaultUnhealthyThreshold),
		Replace:            h.Replace,
		MaxUnavailable:     orDefault(h.MaxUnavailable, DefaultMaxUnavailable),
		HoldShare:          h.HoldShare,
		ReplacementLimit:   orDefault(h.ReplacementLimit, DefaultReplacementLimit),
		ReplacementWindow:  duration(h.ReplacementWindow, DefaultReplacementWindow),
	}

	if s.HoldShare <= 0 {
		s.HoldShare = DefaultHoldShare
	}

	switch {
	case len(h.Command) > 0:
		s.Kind = api.HealthKindExec
	case h.TTL != "":
		s.Kind = api.HealthKindTTL
		s.TTL = duration(h.TTL, DefaultInterval)
		// The daemon looks for missed reports every ttl: a report due in ttl is late then.
		s.Interval = s.TTL
	case h.HTTP != nil:
		s.Kind = api.HealthKindHTTP
		s.Port = h.HTTP.Port
		s.Path = h.HTTP.Path
		if s.Path == "" {
			s.Path = "/"
		}
	case h.TCP != nil:
		s.Kind = api.HealthKindTCP
		s.Port = h.TCP.Port
	default:
		return Settings{}, false
	}

	return s, true
}

func duration(value string, fallback time.Duration) time.Duration {
	d, err := time.ParseDuration(value)
	if value == "" || err != nil {
		return fallback
	}

	return d
}

func orDefault(n int, fallback int) int {
	if n <= 0 {
		return fallback
	}

	return n
}

// Result is the outcome of one check.
type Result struct {
	Passed bool
	Output string
	At     time.Time

	// ExitCode of the command; -1 when it could not run.
	ExitCode int

	// Expiry: a ttl check's instance sent no report in time (recorded only if none
	// arrived meanwhile).
	Expiry bool

	// NoVerdict: the check could not run (LXD did not answer or refused the exec, the
	// daemon's own connection failed). It says nothing of the instance: the instance keeps
	// its last verdict, and Output says why the check did not run.
	NoVerdict bool

	// CannotStart: the check failed because its command could not start (exit 126 or 127)
	// or nothing listens on its port. A verdict on the instance, unless every instance
	// fails so: then the check is broken (CheckState).
	CannotStart bool
}

// Exit codes of a command that could not start: the shell's (and LXD's forkexec's)
// "found but not executable" and "not found".
const (
	exitCannotExecute = 126
	exitNotFound      = 127
)

// cannotStart says whether an exec check's exit code is its command failing to start.
func cannotStart(exitCode int) bool {
	return exitCode == exitCannotExecute || exitCode == exitNotFound
}

// Summary is what may leave the API about a health record: the verdict and the check's
// exit code, never its output, which can hold anything the command printed (a status page
// with a token in it). Webhooks, events, the activity log and info logs use it; the
// output is for admins in the API, and for debug logs.
func Summary(h db.InstanceHealth) string {
	if h.Stale != "" {
		return h.Status + " (the latest check could not run: no verdict)"
	}

	if h.ExitCode < 0 {
		return h.Status + " (the check could not run)"
	}

	return fmt.Sprintf("%s (check exit code %d)", h.Status, h.ExitCode)
}

// Next is an instance's health record after one more result. Results in a row count toward
// a threshold; a failure within the grace period after the instance started gives no
// verdict (the service may still be starting), but a pass does. A check that could not
// run (NoVerdict) is no result: only its reason is kept, as the record's Stale.
func Next(prev db.InstanceHealth, s Settings, started time.Time, r Result) db.InstanceHealth {
	next := prev
	if r.NoVerdict {
		next.Stale = r.Output
		if next.Stale == "" {
			next.Stale = "the check could not run"
		}

		return next
	}

	next.Stale = ""
	next.CannotStart = !r.Passed && r.CannotStart
	at := r.At.UTC()
	next.Output = r.Output
	next.ExitCode = r.ExitCode
	next.CheckedAt = &at
	if next.Status == "" || next.Status == api.HealthUnknown {
		next.Status = api.HealthStarting
	}

	if r.Passed {
		next.Streak = max(prev.Streak, 0) + 1
	} else {
		next.Streak = min(prev.Streak, 0) - 1
		if r.At.Before(started.Add(s.Grace)) {
			next.Streak = 0
		}
	}

	switch {
	case next.Streak >= s.HealthyThreshold:
		next.Status = api.HealthHealthy
		next.Replacement = false
	case next.Streak <= -s.UnhealthyThreshold:
		next.Status = api.HealthUnhealthy
	}

	return next
}
