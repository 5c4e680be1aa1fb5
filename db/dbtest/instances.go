package dbtest

import (
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// InstanceCase is one instance record of InstanceCases: a state, a hook wait, a health
// verdict, and whether it was made from an older revision than its shape's latest.
type InstanceCase struct {
	Shape, Name         string
	State, Hook, Health string
	Outdated            bool

	// Where a test wrote it: its shape, the shape's latest revision, its deployment.
	ShapeID      int64
	Latest       int
	DeploymentID int64
	Project      string
}

func (c InstanceCase) String() string {
	return fmt.Sprintf("%s/hook=%q/health=%s/outdated=%v", c.State, c.Hook, c.Health, c.Outdated)
}

// LegacyState is a state no code writes, as a record from an older (or newer) build would
// hold: the rules must give it one answer in SQL and in Go too.
const LegacyState = "legacy"

// InstanceCases are the instance records that the rules' table tests walk: every state of
// rules.States (and LegacyState), every hook wait, health verdict and revision, each named
// for the one shape that holds it (so a shape's counts are that instance's answer). Outside
// tests only package fleet writes instance records (fleet's TestDoneCheck), so each test
// writes them itself.
func InstanceCases() []InstanceCase {
	var cases []InstanceCase
	for _, state := range append(append([]string{}, rules.States...), LegacyState) {
		for _, hook := range []string{"", api.LifecycleLaunchingWait, api.LifecycleTerminatingWait} {
			for _, health := range []string{api.HealthHealthy, api.HealthUnhealthy, api.HealthStarting} {
				for _, outdated := range []bool{false, true} {
					n := len(cases)
					cases = append(cases, InstanceCase{Shape: fmt.Sprintf("s%d", n), Name: fmt.Sprintf("i%d", n), State: state, Hook: hook, Health: health, Outdated: outdated, Project: "default", Latest: 2})
				}
			}
		}
	}

	return cases
}
