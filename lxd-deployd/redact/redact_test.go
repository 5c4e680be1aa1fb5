package redact

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"environment.MODE":      true,
		"Environment.x":         true,
		"user.api_token":        true,
		"user.DB_Password":      true,
		"user.signing_key":      true,
		"secret.psk":            true,
		"user.tier":             false,
		"limits.cpu":            false,
		"revisions.keep":        false,
		"security.nesting":      false,
		"cloud-init.user-data":  false,
		"user.keyboard_layout":  true, // the rule is a plain substring: better masked than leaked
		"volatile.eth0.hwaddr":  false,
		"raw.lxc":               false,
		"boot.autostart.delay":  false,
		"user.access-key-id":    true,
		"user.session_token_id": true,
	} {
		if SecretKey(key) != want {
			t.Errorf("SecretKey(%q) = %v, want %v", key, !want, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"api":                                  "api",
		"api: environment.DB_PASSWORD=hunter2": "api: environment.DB_PASSWORD=[redacted]",
		"set user.api_token: abc, user.tier=gold":    "set user.api_token: [redacted], user.tier=gold",
		`password="two words" then token='x y' done`: `password=[redacted] then token=[redacted] done`,
		"rollout 3: replace outdated instance":       "rollout 3: replace outdated instance",
		"delete web-1 (environment.X=1)":             "delete web-1 (environment.X=[redacted])",
		"key=":                                       "key=",
		"unhealthy (check exit code 7)":              "unhealthy (check exit code 7)",
		"token=a;password=b":                         "token=[redacted];password=[redacted]",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChangesMaskSecretFieldsOnly(t *testing.T) {
	in := []api.DeploymentFieldChange{
		{Field: "instance_template.config.environment.DB_PASSWORD", Old: "a", New: "b"},
		{Field: "instance_template.config.environment.NEW", Old: nil, New: "b"},
		{Field: "instance_template.devices.eth0.secret.psk", Old: "a", New: nil},
		{Field: "instance_template.devices.key-disk.path", Old: "/a", New: "/b"},
		{Field: "config.user.tier", Old: "a", New: "b"},
		{Field: "instance_template.source.alias", Old: "a", New: "b"},
	}

	out := Changes(in)
	want := []struct{ old, new any }{{Mask, Mask}, {nil, Mask}, {Mask, nil}, {"/a", "/b"}, {"a", "b"}, {"a", "b"}}
	for i, w := range want {
		if out[i].Old != w.old || out[i].New != w.new {
			t.Errorf("%s: %v -> %v, want %v -> %v", out[i].Field, out[i].Old, out[i].New, w.old, w.new)
		}
	}

	if in[0].Old != "a" {
		t.Errorf("Changes changed its input")
	}
}
