package validate

import (
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestName(t *testing.T) {
	good := []string{"a", "dep1", "web-servers", "A-b-9", strings.Repeat("a", 63)}
	for _, name := range good {
		if err := Name("deployment", name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}

	bad := map[string]string{
		"":                      "required",
		"1abc":                  "must not start",
		"-abc":                  "must not start",
		"a_b":                   "invalid character",
		"a b":                   "invalid character",
		"a/b":                   "invalid character",
		"é":                     "invalid character",
		strings.Repeat("a", 64): "too long",
	}

	for name, want := range bad {
		err := Name("shape", name)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "shape") {
			t.Errorf("%q: got %v, want an error about %q naming the shape", name, err, want)
		}
	}
}

func TestBounds(t *testing.T) {
	tests := []struct {
		min, max int
		ok       bool
	}{
		{0, 0, true}, {1, 3, true}, {3, 3, true}, {-1, 3, false}, {4, 3, false},
	}

	for _, tt := range tests {
		err := Bounds(tt.min, tt.max)
		if (err == nil) != tt.ok {
			t.Errorf("Bounds(%d, %d) = %v", tt.min, tt.max, err)
		}
	}
}

func TestInstanceTemplate(t *testing.T) {
	image := lxdapi.InstanceSource{Type: "image", Alias: "busybox"}
	tests := []struct {
		name     string
		template lxdapi.InstancesPost
		want     string
	}{
		{"image", lxdapi.InstancesPost{Source: image}, ""},
		{"empty", lxdapi.InstancesPost{}, ""},
		{"vm", lxdapi.InstancesPost{Source: image, Type: "virtual-machine"}, ""},
		{"named", lxdapi.InstancesPost{Name: "x", Source: image}, "name must be empty"},
		{"bad type", lxdapi.InstancesPost{Type: "pod"}, "instance_template.type"},
		{"image without alias", lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image"}}, "alias"},
		{"bad source", lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "ftp"}}, "source.type"},
		{"device without type", lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Devices: map[string]map[string]string{"eth0": {}}}}, "needs a type"},
		{"bad profile", lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Profiles: []string{"a b"}}}, "profiles"},
	}

	for _, tt := range tests {
		err := InstanceTemplate(tt.template)
		if tt.want == "" && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}

		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestConfigAndWebhook(t *testing.T) {
	if err := Deployment(api.DeploymentPut{Config: map[string]string{"user.a": "b"}, GovernorWebhookURL: "https://gov.example/hook"}); err != nil {
		t.Error(err)
	}

	if err := Deployment(api.DeploymentPut{Config: map[string]string{"bogus": "b"}}); err == nil {
		t.Error("unknown config key must be refused")
	}

	for _, raw := range []string{"ftp://x", "not a url", "/relative"} {
		if err := WebhookURL(raw); err == nil {
			t.Errorf("%q must be refused", raw)
		}
	}

	if err := Role("owner"); err == nil {
		t.Error("unknown role must be refused")
	}

	if err := Fingerprint("ABC"); err == nil {
		t.Error("short fingerprint must be refused")
	}
}

func TestConfigValues(t *testing.T) {
	good := map[string]string{"webhook.metrics_interval": "0", "webhook.timeout": "2s", "webhook.retry_max_attempts": "3", "user.x": "anything"}
	if err := KnownConfig("deployment", good, DeploymentConfigKeys); err != nil {
		t.Fatal(err)
	}

	for key, value := range map[string]string{"webhook.metrics_interval": "soon", "webhook.timeout": "0", "webhook.retry_max_attempts": "0"} {
		if err := KnownConfig("deployment", map[string]string{key: value}, DeploymentConfigKeys); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v", key, value, err)
		}
	}

	if err := KnownConfig("shape", map[string]string{"governor.socket": "yes"}, ShapeConfigKeys); err == nil {
		t.Error("governor.socket must be a boolean")
	}
}

func TestGovernorSocketIsForContainers(t *testing.T) {
	put := api.DeploymentShapePut{Config: map[string]string{"governor.socket": "true"}, InstanceTemplate: lxdapi.InstancesPost{Type: "virtual-machine"}}
	if err := Shape(put); err == nil || !strings.Contains(err.Error(), "vsock") {
		t.Fatalf("a VM shape with governor.socket: %v", err)
	}

	put.InstanceTemplate.Type = "container"
	if err := Shape(put); err != nil {
		t.Fatal(err)
	}
}
