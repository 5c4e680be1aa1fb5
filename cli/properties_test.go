package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestParseKeyValues(t *testing.T) {
	tests := []struct {
		args []string
		want map[string]string
		err  string
	}{
		{args: []string{"a=1"}, want: map[string]string{"a": "1"}},
		{args: []string{"a=1", "b=x=y", "c="}, want: map[string]string{"a": "1", "b": "x=y", "c": ""}},
		{args: []string{"a", "1"}, want: map[string]string{"a": "1"}},
		{args: []string{"a", "1", "2"}, err: `"a" is not of the form key=value`},
		{args: []string{"=1"}, err: "no key"},
		{args: nil, err: "nothing to set"},
	}

	for _, tt := range tests {
		got, err := parseKeyValues(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: want error %q, got %v", tt.args, tt.err, err)
			}

			continue
		}

		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

func TestSetUnsetConfig(t *testing.T) {
	config := map[string]string{"user.a": "1", "user.b": "2"}
	updated, err := setConfig(config, map[string]string{"user.a": "10", "user.b": "", "user.c": "3"})
	if err != nil {
		t.Fatal(err)
	}

	if !reflect.DeepEqual(updated, map[string]string{"user.a": "10", "user.c": "3"}) {
		t.Errorf("set: %v", updated)
	}

	if config["user.a"] != "1" || config["user.b"] != "2" {
		t.Errorf("set changed its input: %v", config)
	}

	_, err = setConfig(nil, map[string]string{"bad key": "1"})
	if err == nil {
		t.Error("a key with a space was accepted")
	}

	fromNil, err := setConfig(nil, map[string]string{"user.a": "1"})
	if err != nil || fromNil["user.a"] != "1" {
		t.Errorf("set on nil config: %v %v", fromNil, err)
	}

	updated, err = unsetConfig(config, []string{"user.a"}, "deployment")
	if err != nil || !reflect.DeepEqual(updated, map[string]string{"user.b": "2"}) {
		t.Errorf("unset: %v %v", updated, err)
	}

	_, err = unsetConfig(config, []string{"user.a", "user.zz"}, "deployment")
	if err == nil || !strings.Contains(err.Error(), `deployment config key "user.zz" is not set`) {
		t.Errorf("unset of a missing key: %v", err)
	}

	_, err = unsetConfig(config, nil, "deployment")
	if err == nil {
		t.Error("unset of nothing was accepted")
	}
}

func TestDeploymentFields(t *testing.T) {
	d := &api.Deployment{DeploymentPost: api.DeploymentPost{Name: "dep1"}, Project: "default"}
	fields := deploymentFields()

	err := fields.applySet(d, []string{"user.x=1"}, false)
	if err != nil || d.Config["user.x"] != "1" {
		t.Fatalf("set config: %v %v", d.Config, err)
	}

	err = fields.applySet(d, []string{"description=My app", "governor_webhook_url=https://gov/scale"}, true)
	if err != nil || d.Description != "My app" || d.GovernorWebhookURL != "https://gov/scale" {
		t.Fatalf("set properties: %+v %v", d, err)
	}

	for key, want := range map[string]string{"name": "dep1", "project": "default", "description": "My app"} {
		got, err := fields.getValue(d, key, true)
		if err != nil || got != want {
			t.Errorf("get -p %s = %q, %v; want %q", key, got, err, want)
		}
	}

	got, err := fields.getValue(d, "user.missing", false)
	if err != nil || got != "" {
		t.Errorf("get of a missing config key = %q, %v; want empty", got, err)
	}

	err = fields.applyUnset(d, []string{"description"}, true)
	if err != nil || d.Description != "" {
		t.Errorf("unset -p description: %q %v", d.Description, err)
	}

	err = fields.applySet(d, []string{"name=other"}, true)
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("set -p name: %v", err)
	}

	_, err = fields.getValue(d, "nope", true)
	if err == nil || !strings.Contains(err.Error(), "description, governor_webhook_url, name, project") {
		t.Errorf("get -p nope: %v", err)
	}
}

func TestShapeFields(t *testing.T) {
	s := &api.DeploymentShape{}
	fields := shapeFields()
	err := fields.applySet(s, []string{"scaling_minimum=1", "scaling_maximum=3"}, true)
	if err != nil || s.ScalingMinimum != 1 || s.ScalingMaximum != 3 {
		t.Fatalf("set bounds: %+v %v", s, err)
	}

	err = fields.applySet(s, []string{"scaling_maximum=many"}, true)
	if err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("non-numeric bound: %v", err)
	}

	err = fields.applyUnset(s, []string{"scaling_minimum"}, true)
	if err != nil || s.ScalingMinimum != 0 {
		t.Errorf("unset -p scaling_minimum: %d %v", s.ScalingMinimum, err)
	}

	err = fields.applySet(s, []string{"scaling_current=2"}, true)
	if err == nil || !strings.Contains(err.Error(), "description, resource_bounds.limits.cpu.maximum, resource_bounds.limits.cpu.minimum, resource_bounds.limits.memory.maximum, resource_bounds.limits.memory.minimum, rollout.auto_revert, rollout.canary.count, rollout.max_surge, rollout.max_unavailable, rollout.min_ready, rollout.progress_deadline, rollout.strategy, rollout.trigger, scaling_maximum, scaling_minimum") {
		t.Errorf("set -p scaling_current: %v", err)
	}
}

func TestShapeRolloutProperties(t *testing.T) {
	s := &api.DeploymentShape{}
	fields := shapeFields()
	err := fields.applySet(s, []string{"rollout.strategy=canary", "rollout.max_surge=25%", "rollout.canary.count=2", "rollout.auto_revert=true"}, true)
	if err != nil || s.Rollout.Strategy != "canary" || s.Rollout.MaxSurge != "25%" || s.Rollout.Canary.Count != 2 || !s.Rollout.AutoRevert {
		t.Fatalf("set rollout properties: %+v %v", s.Rollout, err)
	}

	err = fields.applyUnset(s, []string{"rollout.canary.count", "rollout.max_surge"}, true)
	if err != nil || s.Rollout.Canary != nil || s.Rollout.MaxSurge != "" {
		t.Fatalf("unset rollout properties: %+v %v", s.Rollout, err)
	}

	if err = fields.applySet(s, []string{"rollout.auto_revert=maybe"}, true); err == nil {
		t.Error("a non-boolean auto_revert must be refused")
	}

	if err = fields.applySet(s, []string{"revision=3"}, true); err == nil {
		t.Error("revision is read-only")
	}
}

func TestKeyFieldsHaveNoConfig(t *testing.T) {
	k := &api.DeploymentKey{DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}}
	got, err := keyFields().getValue(k, "role", true)
	if err != nil || got != "admin" {
		t.Errorf("get role: %q %v", got, err)
	}

	_, err = keyFields().getValue(k, "user.x", false)
	if err == nil || !strings.Contains(err.Error(), "no config keys") {
		t.Errorf("config key on a key: %v", err)
	}
}
