package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func event(t *testing.T, eventType string, project string, metadata any) lxdapi.Event {
	t.Helper()
	encoded, err := json.Marshal(metadata)
	if err != nil {
		t.Fatal(err)
	}

	return lxdapi.Event{Type: eventType, Project: project, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Metadata: encoded}
}

func TestEventConcernsDeployment(t *testing.T) {
	tests := []struct {
		event lxdapi.Event
		want  bool
	}{
		{event(t, "lifecycle", "default", lxdapi.EventLifecycle{Source: "/1.0/deployments/dep1/shapes/web/instances/w1"}), true},
		{event(t, "lifecycle", "default", lxdapi.EventLifecycle{Source: "/1.0/deployments/dep1"}), true},
		{event(t, "lifecycle", "default", lxdapi.EventLifecycle{Source: "/1.0/deployments/dep10"}), false},
		{event(t, "lifecycle", "p2", lxdapi.EventLifecycle{Source: "/1.0/deployments/dep1?project=p2"}), true},
		{event(t, "operation", "default", lxdapi.Operation{Resources: map[string][]string{"deployment_shapes": {"/1.0/deployments/dep1/shapes/web"}}}), true},
		{event(t, "operation", "default", lxdapi.Operation{Resources: map[string][]string{"deployment_shapes": {"/1.0/deployments/other/shapes/web"}}}), false},
		{event(t, "logging", "", lxdapi.EventLogging{Message: "x", Context: map[string]string{"deployment": "dep1"}}), true},
		{event(t, "logging", "", lxdapi.EventLogging{Message: "x"}), false},
	}

	for i, tt := range tests {
		got := eventConcerns(tt.event, "dep1")
		if got != tt.want {
			t.Errorf("%d: %s %s: got %v, want %v", i, tt.event.Type, tt.event.Metadata, got, tt.want)
		}
	}
}

func TestPrettyEvent(t *testing.T) {
	line := prettyEvent(event(t, "lifecycle", "default", lxdapi.EventLifecycle{Action: "deployment-instance-created", Source: "/1.0/deployments/dep1/shapes/web/instances/w1", Requestor: &lxdapi.EventLifecycleRequestor{Username: "gov", Protocol: "tls"}}))
	want := "2026-01-02T03:04:05.000Z lifecycle deployment-instance-created /1.0/deployments/dep1/shapes/web/instances/w1 (by gov over tls)"
	if line != want {
		t.Fatalf("got %q, want %q", line, want)
	}

	line = prettyEvent(event(t, "logging", "", lxdapi.EventLogging{Level: "info", Message: "lifecycle", Context: map[string]string{"b": "2", "a": "1"}}))
	if !strings.HasSuffix(line, `logging info lifecycle a="1" b="2"`) {
		t.Fatalf("got %q", line)
	}
}
