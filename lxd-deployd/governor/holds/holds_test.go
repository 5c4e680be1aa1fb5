package holds

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
)

// TestClaimGovernor: the registration rule on its own, against a clock.
func TestClaimGovernor(t *testing.T) {
	ref := refs.DeploymentRef{Project: "default", Name: "dep1"}
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	a := db.GovernorHold{DeploymentID: 1, Fingerprint: "a", KeyName: "ka", Governor: "gov-a"}
	b := db.GovernorHold{DeploymentID: 1, Fingerprint: "b", KeyName: "kb", Governor: "gov-b"}
	held, err := Claim(ref, nil, false, a, false, t0, time.Minute)
	if err != nil || !held.Since.Equal(t0) || !held.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first claim: %+v %v", held, err)
	}

	renewed, err := Claim(ref, &held, true, a, false, t0.Add(30*time.Second), time.Minute)
	if err != nil || !renewed.Since.Equal(t0) || !renewed.ExpiresAt.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("renewal: %+v %v", renewed, err)
	}

	_, err = Claim(ref, &renewed, true, b, false, t0.Add(time.Minute), time.Minute)
	if err == nil || !strings.Contains(err.Error(), `governor "gov-a" (key "ka") since 2026-11-27T20:00:00Z`) {
		t.Fatalf("second governor: %v", err)
	}

	// The same certificate under another name is another governor.
	_, err = Claim(ref, &renewed, true, db.GovernorHold{Fingerprint: "a", KeyName: "ka", Governor: "gov-a2"}, false, t0.Add(time.Minute), time.Minute)
	if err == nil {
		t.Fatal("a second process of the same certificate took the deployment")
	}

	for name, c := range map[string]struct {
		valid    bool
		takeover bool
		at       time.Time
	}{
		"takeover":      {true, true, t0.Add(time.Minute)},
		"expired":       {true, false, t0.Add(90 * time.Second)},
		"key withdrawn": {false, false, t0.Add(time.Minute)},
	} {
		next, err := Claim(ref, &renewed, c.valid, b, c.takeover, c.at, time.Minute)
		if err != nil || next.Governor != "gov-b" || !next.Since.Equal(c.at) {
			t.Errorf("%s: %+v %v", name, next, err)
		}
	}
}
