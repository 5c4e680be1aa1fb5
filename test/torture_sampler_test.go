package test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The instance config keys lxd-deployd tags its LXD instances with.
const (
	configDeployment = "user.lxd-deployd.deployment"
	configShape      = "user.lxd-deployd.shape"
	configWarmPool   = "user.lxd-deployd.warm-pool"
)

// sampleInterval is how often the sampler reads LXD's instance list.
const sampleInterval = 50 * time.Millisecond

// lxdSample is what LXD held of each shape at one moment: warm-pool instances left out,
// since they never count as instances of their shape.
type lxdSample struct {
	at      time.Time // just before the list was read
	names   map[string][]string
	running map[string]int
}

// sampleLXD reads LXD's own instance list once and checks the bound invariants on it;
// TestTorture runs it every 50 ms with sampleEvery.
func (tt *torture) sampleLXD() {
	s, err := tt.readLXD()
	if err != nil {
		tt.lxdFailures.Add(1)
		return
	}

	tt.checkSample(s)
	tt.samples.Add(1)
}

func (tt *torture) readLXD() (lxdSample, error) {
	s := lxdSample{at: time.Now(), names: map[string][]string{}, running: map[string]int{}}
	instances, err := tt.sampleConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return s, err
	}

	for _, i := range instances {
		if i.Config[configDeployment] != "dep1" || i.Config[configWarmPool] == "true" {
			continue
		}

		shape := i.Config[configShape]
		s.names[shape] = append(s.names[shape], i.Name+"("+i.Status+")")
		if i.Status == "Running" {
			s.running[shape]++
		}
	}

	return s, nil
}

// checkSample holds one sample to the invariants: LXD never holds more instances of a
// shape than its scaling_maximum; while a rolling rollout with max_unavailable 0 runs, the
// running instances of its shape never drop below the size at its start.
func (tt *torture) checkSample(s lxdSample) {
	for shape, names := range s.names {
		tt.mu.Lock()
		tt.mostSeen[shape] = max(tt.mostSeen[shape], len(names))
		tt.mu.Unlock()
		bound, ok := tt.shapes[shape]
		if !ok {
			tt.violate("instance of no shape", "LXD holds instances tagged with unknown shape %q: %v", shape, names)
			continue
		}

		if len(names) > bound.max {
			sort.Strings(names)
			tt.violate("LXD holds at most scaling_maximum", "LXD held %d instances of shape %s (scaling_maximum %d): %s", len(names), shape, bound.max, strings.Join(names, " "))
		}
	}

	if len(s.names["roll"]) > rollSize {
		tt.rollSurges.Add(1)
	}

	tt.rememberRollRunning(s)
	tt.checkGuarded(s)

	// Shape roll keeps rollSize instances; only fewer running can break the rollout rule.
	if s.running["roll"] >= rollSize {
		return
	}

	tt.rollChecks.Add(1)
	rollouts, err := tt.watcher.GetDeploymentShapeRollouts("dep1", "roll")
	tt.checkAnswer("GET roll's rollouts", err)
	if err != nil {
		return
	}

	for _, r := range rollouts {
		// Read after the sample: a rollout still unfinished now that had started before
		// the sample was running when it was taken.
		if r.Finished() || !r.CreatedAt.Before(s.at) || !rollingWithoutUnavailable(r.Strategy) {
			continue
		}

		// The rollout keeps running what ran when it started: its size, or fewer when
		// instances were still starting then (after a kill -9, say), which it did not cause.
		floor := min(r.Size, tt.rollRunningBefore(r.CreatedAt))
		if s.running["roll"] < floor {
			names := s.names["roll"]
			sort.Strings(names)
			tt.violate("rolling rollout with max_unavailable 0 keeps its size running", "rollout %d (%s, size %d, %d running at its start, revision %d) ran with %d instances running: %s", r.Number, r.Status, r.Size, floor, r.Revision, s.running["roll"], strings.Join(names, " "))
		}
	}
}

// rollingWithoutUnavailable reports whether a rollout's settings are a rolling rollout with
// max_unavailable 0 (the defaults of both).
func rollingWithoutUnavailable(s api.DeploymentShapeRollout) bool {
	if s.Strategy != "" && s.Strategy != api.RolloutRolling {
		return false
	}

	switch s.MaxUnavailable {
	case "", "0", "0%":
		return true
	}

	return false
}

// checkAnswer records an API answer that is a 5xx: the daemon never answers one.
func (tt *torture) checkAnswer(what string, err error) {
	if err == nil {
		return
	}

	code, ok := lxdapi.StatusErrorMatch(err)
	if ok && code >= 500 {
		tt.violate("no API answer is a 5xx", "%s: HTTP %d: %v", what, code, err)
	}

	// An answer that is not LXD's envelope reaches us only as the client's text.
	if !ok && strings.Contains(err.Error(), "bad answer (HTTP 5") {
		tt.violate("no API answer is a 5xx", "%s: %v", what, err)
	}
}

// describe is a short form of an API error for the operation log.
func describe(err error) string {
	if err == nil {
		return "ok"
	}

	if code, ok := lxdapi.StatusErrorMatch(err); ok {
		return fmt.Sprintf("%d %v", code, err)
	}

	return err.Error()
}

// rollHistory keeps how many of shape roll LXD ran in the samples of the last 30 s, so the
// rollout rule can ask how many ran when a rollout started.
type rollHistory struct {
	mu      sync.Mutex
	samples []rollRunning
}

type rollRunning struct {
	at      time.Time
	running int
}

// rememberRollRunning records a sample's count of running roll instances.
func (tt *torture) rememberRollRunning(s lxdSample) {
	h := &tt.rollHistory
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = append(h.samples, rollRunning{at: s.at, running: s.running["roll"]})
	for len(h.samples) > 0 && s.at.Sub(h.samples[0].at) > 30*time.Second {
		h.samples = h.samples[1:]
	}
}

// rollRunningBefore is how many of roll ran in the last sample taken before t (a rollout's
// start); with no such sample kept, as many as roll keeps.
func (tt *torture) rollRunningBefore(t time.Time) int {
	h := &tt.rollHistory
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.samples) - 1; i >= 0; i-- {
		if h.samples[i].at.Before(t) {
			return h.samples[i].running
		}
	}

	return rollSize
}
