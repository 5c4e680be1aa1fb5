// Package validate holds the one set of rules for names and bounds, used by the daemon, the
// client and the CLI alike so that all three refuse the same input with the same words.
package validate

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// NameRule says in words what Name enforces; errors and docs quote it.
const NameRule = "1 to 63 characters, letters, digits and '-', not starting with a digit or '-'"

// Name checks a deployment, shape, key or instance name. kind ("deployment", "shape", ...)
// names the object in the error.
func Name(kind string, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is required (%s)", kind, NameRule)
	}

	if len(name) > 63 {
		return fmt.Errorf("%s name %q is too long: %s", kind, name, NameRule)
	}

	for i, r := range name {
		letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		digit := r >= '0' && r <= '9'
		switch {
		case letter:
		case (digit || r == '-') && i > 0:
		case digit || r == '-':
			return fmt.Errorf("%s name %q must not start with a digit or '-' (%s)", kind, name, NameRule)
		default:
			return fmt.Errorf("%s name %q has invalid character %q (%s)", kind, name, r, NameRule)
		}
	}

	return nil
}

// ProjectName checks an LXD project name the way LXD does: not empty, at most 63
// characters, no '/', whitespace, control characters or URL delimiters, not "." or "..".
func ProjectName(name string) error {
	if name == "" || len(name) > 63 || name == "." || name == ".." || strings.ContainsAny(name, "/?&#%") {
		return fmt.Errorf("project name %q is not valid: 1 to 63 characters, without '/', '?', '&', '#' or '%%', and not \".\" or \"..\"", name)
	}

	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("project name %q must not contain spaces or control characters", name)
		}
	}

	return nil
}

// Bounds checks a shape's scaling bounds.
func Bounds(minimum int, maximum int) error {
	if minimum < 0 {
		return fmt.Errorf("scaling_minimum must be 0 or more, got %d", minimum)
	}

	if maximum < minimum {
		return fmt.Errorf("scaling_maximum (%d) must be at least scaling_minimum (%d)", maximum, minimum)
	}

	return nil
}

// Role checks a deployment key role. The empty role is not accepted here: callers default
// it to read-only before validating.
func Role(role string) error {
	switch role {
	case api.DeploymentKeyRoleAdmin, api.DeploymentKeyRoleReadOnly:
		return nil
	}

	return fmt.Errorf("role %q is not valid: use %q or %q", role, api.DeploymentKeyRoleAdmin, api.DeploymentKeyRoleReadOnly)
}

// CertificateType checks a trust store certificate type.
func CertificateType(certType string) error {
	switch certType {
	case api.CertificateTypeClient, api.CertificateTypeDeployments, api.CertificateTypeMetrics:
		return nil
	}

	return fmt.Errorf("certificate type %q is not valid: use %q, %q or %q", certType, api.CertificateTypeClient, api.CertificateTypeDeployments, api.CertificateTypeMetrics)
}

// Fingerprint checks a full SHA-256 certificate fingerprint (64 lower-case hex digits).
func Fingerprint(fingerprint string) error {
	if len(fingerprint) != 64 || strings.Trim(fingerprint, "0123456789abcdef") != "" {
		return fmt.Errorf("certificate fingerprint %q is not valid: give the full 64-character hex SHA-256 fingerprint", fingerprint)
	}

	return nil
}

// ConfigKey checks a configuration key of a deployment or shape.
func ConfigKey(key string) error {
	if key == "" {
		return fmt.Errorf("config key must not be empty")
	}

	for _, r := range key {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("config key %q must not contain spaces or control characters", key)
		}
	}

	return nil
}

// Config checks every key of a configuration map.
func Config(config map[string]string) error {
	for key := range config {
		err := ConfigKey(key)
		if err != nil {
			return err
		}
	}

	return nil
}

// InstanceTemplate checks a shape's instance template: a valid api.InstancesPost without a
// name, since every instance of the shape gets its own.
func InstanceTemplate(t lxdapi.InstancesPost) error {
	if t.Name != "" {
		return fmt.Errorf("instance_template.name must be empty: instances are named when launched")
	}

	switch t.Type {
	case "", lxdapi.InstanceTypeContainer, lxdapi.InstanceTypeVM:
	default:
		return fmt.Errorf("instance_template.type %q is not valid: use %q or %q", t.Type, lxdapi.InstanceTypeContainer, lxdapi.InstanceTypeVM)
	}

	switch t.Source.Type {
	case "none", "":
		// An empty source means an empty instance (or one built from profiles only).
	case "image":
		if t.Source.Alias == "" && t.Source.Fingerprint == "" && len(t.Source.Properties) == 0 {
			return fmt.Errorf("instance_template.source of type image needs an alias, a fingerprint or properties")
		}

	case "copy":
		if t.Source.Source == "" {
			return fmt.Errorf("instance_template.source of type copy needs a source instance")
		}

	default:
		return fmt.Errorf("instance_template.source.type %q is not valid: use \"image\", \"copy\" or \"none\"", t.Source.Type)
	}

	for _, profile := range t.Profiles {
		if profile == "" || strings.ContainsAny(profile, "/ \t\n") {
			return fmt.Errorf("instance_template.profiles: %q is not a valid profile name", profile)
		}
	}

	for name, device := range t.Devices {
		if name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("instance_template.devices: %q is not a valid device name", name)
		}

		if device["type"] == "" {
			return fmt.Errorf("instance_template.devices.%s: a device needs a type", name)
		}
	}

	for key := range t.Config {
		err := ConfigKey(key)
		if err != nil {
			return fmt.Errorf("instance_template.config: %w", err)
		}
	}

	return TemplateLimits(t.Config)
}

// Shape checks the writable fields of a shape.
func Shape(put api.DeploymentShapePut) error {
	err := Bounds(put.ScalingMinimum, put.ScalingMaximum)
	if err != nil {
		return err
	}

	err = KnownConfig("shape", put.Config, ShapeConfigKeys)
	if err != nil {
		return err
	}

	if put.Config["governor.socket"] == "true" && put.InstanceTemplate.Type == lxdapi.InstanceTypeVM {
		return fmt.Errorf("governor.socket is for containers (LXD proxies a unix socket into them): governors in VMs use vsock")
	}

	err = Rollout(put.Rollout)
	if err != nil {
		return err
	}

	err = ShapeLifecycle(put)
	if err != nil {
		return err
	}

	err = ResourceBounds(put)
	if err != nil {
		return err
	}

	err = ShapePlacement(put.Placement)
	if err != nil {
		return err
	}

	err = ShapeSchedule(put.Schedule)
	if err != nil {
		return err
	}

	err = ShapeTraffic(put.Traffic)
	if err != nil {
		return err
	}

	return InstanceTemplate(put.InstanceTemplate)
}

// userConfigPrefix marks free-form config keys, as in LXD.
const userConfigPrefix = "user."

// DeploymentConfigKeys lists the config keys a deployment understands besides user.*.
var DeploymentConfigKeys = map[string]string{
	"webhook.metrics_interval":    "how often metrics are sent to the webhook (duration, default 60s, 0 = off)",
	"webhook.timeout":             "how long one delivery attempt may take (duration, default 10s)",
	"webhook.retry_max_attempts":  "attempts before a delivery is marked failed (integer, default 10)",
	"webhook.retry_initial_delay": "wait before the first retry, doubled each time (duration, default 1s)",
	"webhook.retry_max_delay":     "longest wait between retries (duration, default 5m)",
	"revisions.keep":              "shape revisions kept per shape (integer, default 20), resize revisions and the others counted apart; those instances or unfinished rollouts use are always kept",
	"activity.keep":               "activity log entries kept (integer, default 1000), an admin's entries and the others counted apart",
	"rollouts.keep":               "finished rollouts kept per shape (integer, default 50); those a kept revision or activity entry names are always kept",
}

// configValueRules check the values of keys that are not free text.
var configValueRules = map[string]func(string) error{
	"governor.socket":             boolean,
	"governor.external":           boolean,
	"webhook.metrics_interval":    durationBetween(0, time.Second, 24*time.Hour),
	"webhook.timeout":             durationBetween(time.Millisecond, time.Millisecond, time.Minute),
	"webhook.retry_initial_delay": durationBetween(time.Millisecond, time.Millisecond, time.Hour),
	"webhook.retry_max_delay":     durationBetween(time.Millisecond, time.Millisecond, 24*time.Hour),
	"webhook.retry_max_attempts":  integerBetween(1, 100),
	"revisions.keep":              integerBetween(1, 10000),
	"activity.keep":               integerBetween(1, 100000),
	"rollouts.keep":               integerBetween(1, 10000),
}

func boolean(value string) error {
	if value != "true" && value != "false" {
		return fmt.Errorf("must be \"true\" or \"false\", got %q", value)
	}

	return nil
}

// durationBetween accepts "0" when zero is 0 (meaning off), else a duration in [low, high].
func durationBetween(zero time.Duration, low time.Duration, high time.Duration) func(string) error {
	return func(value string) error {
		d, err := time.ParseDuration(value)
		if value == "0" && zero == 0 {
			return nil
		}

		if err != nil || d < low || d > high {
			return fmt.Errorf("must be a duration such as 30s or 5m, from %s to %s, got %q", low, high, value)
		}

		return nil
	}
}

func integerBetween(low int, high int) func(string) error {
	return func(value string) error {
		n, err := strconv.Atoi(value)
		if err != nil || n < low || n > high {
			return fmt.Errorf("must be a whole number from %d to %d, got %q", low, high, value)
		}

		return nil
	}
}

// ShapeConfigKeys lists the config keys a shape understands besides user.*.
var ShapeConfigKeys = map[string]string{
	"governor.socket":   "true gives every new instance a governor socket at /dev/lxd-deployd.sock",
	"governor.external": "true lets governors outside the deployment act on the shape with a valid token",
}

// KnownConfig checks that every key is either user.* or one of known (key -> meaning),
// so that a misspelt key is refused instead of silently ignored.
func KnownConfig(kind string, config map[string]string, known map[string]string) error {
	err := Config(config)
	if err != nil {
		return err
	}

	for key, value := range config {
		_, ok := known[key]
		if !ok && !strings.HasPrefix(key, userConfigPrefix) {
			return fmt.Errorf("%s config key %q is not known: use a user.* key or one of those listed in doc/api.md", kind, key)
		}

		rule := configValueRules[key]
		if rule != nil {
			err = rule(value)
			if err != nil {
				return fmt.Errorf("%s config key %q %v", kind, key, err)
			}
		}
	}

	return nil
}

// WebhookURL checks a governor webhook URL: empty, or an absolute http(s) URL.
func WebhookURL(raw string) error {
	if raw == "" {
		return nil
	}

	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("governor_webhook_url %q must be an absolute http:// or https:// URL", raw)
	}

	return nil
}

// Deployment checks the writable fields of a deployment.
func Deployment(put api.DeploymentPut) error {
	err := KnownConfig("deployment", put.Config, DeploymentConfigKeys)
	if err != nil {
		return err
	}

	return WebhookURL(put.GovernorWebhookURL)
}
