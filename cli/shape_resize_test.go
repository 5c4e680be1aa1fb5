package main

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestResourceBoundFlags(t *testing.T) {
	bounds, err := resourceBoundFlags{cpu: "1-4", memory: "64MiB-"}.bounds()
	if err != nil || bounds[api.LimitCPU] != (api.DeploymentShapeResourceBound{Minimum: "1", Maximum: "4"}) || bounds[api.LimitMemory] != (api.DeploymentShapeResourceBound{Minimum: "64MiB"}) {
		t.Fatalf("got %+v %v", bounds, err)
	}

	_, err = resourceBoundFlags{memory: "2GiB"}.bounds()
	if err == nil || !strings.Contains(err.Error(), "MIN-MAX") {
		t.Fatalf("one value: %v", err)
	}

	bounds, err = resourceBoundFlags{}.bounds()
	if err != nil || bounds != nil {
		t.Fatalf("no flags: %+v %v", bounds, err)
	}
}

func TestResourceBoundProperties(t *testing.T) {
	props := resourceBoundProperties()
	var s api.DeploymentShape
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	must(props["resource_bounds.limits.memory.maximum"].set(&s, "2GiB"))
	must(props["resource_bounds.limits.memory.minimum"].set(&s, "64MiB"))
	if got := props["resource_bounds.limits.memory.maximum"].get(&s); got != "2GiB" {
		t.Fatalf("maximum %q", got)
	}

	if err := props["resource_bounds.limits.cpu.maximum"].set(&s, "lots"); err == nil {
		t.Fatal("a bad CPU count was taken")
	}

	must(props["resource_bounds.limits.memory.maximum"].set(&s, ""))
	must(props["resource_bounds.limits.memory.minimum"].set(&s, ""))
	if len(s.ResourceBounds) != 0 {
		t.Fatalf("unset both ends: %+v", s.ResourceBounds)
	}
}
