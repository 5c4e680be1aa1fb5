// Package redact hides secret values from callers that are not admins. A value is secret
// when its key is an instance environment variable (environment.*) or when the key's name
// contains secret, password, token or key, in any case: config keys of shapes and
// deployments, instance template config and devices, and the same keys in diffs and free
// text. Admins see everything; read-only keys and governors see the mask instead, so they
// still learn that a value is set, and that it changed. doc/security.md states the rule.
package redact

import (
	"maps"
	"regexp"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

// secretWords are the substrings that make a key's value secret.
var secretWords = []string{"secret", "password", "token", "key"}

// SecretKey reports whether the value of a config key is hidden from non-admins.
func SecretKey(key string) bool {
	lower := strings.ToLower(key)
	if strings.HasPrefix(lower, "environment.") {
		return true
	}

	for _, word := range secretWords {
		if strings.Contains(lower, word) {
			return true
		}
	}

	return false
}

// Config returns a copy of a config map with its secret values masked.
func Config(config map[string]string) map[string]string {
	if config == nil {
		return nil
	}

	out := maps.Clone(config)
	for k, v := range out {
		if SecretKey(k) && v != "" {
			out[k] = Mask
		}
	}

	return out
}

// InstanceTemplate masks a template's secret config values, secret device properties and
// the source's migration secret.
func InstanceTemplate(t lxdapi.InstancesPost) lxdapi.InstancesPost {
	t.Config = Config(t.Config)
	if t.Devices != nil {
		devices := make(map[string]map[string]string, len(t.Devices))
		for name, device := range t.Devices {
			devices[name] = Config(device)
		}

		t.Devices = devices
	}

	if t.Source.Secret != "" {
		t.Source.Secret = Mask
	}

	return t
}

// ShapePut masks the secret values of a shape's writable fields.
func ShapePut(p api.DeploymentShapePut) api.DeploymentShapePut {
	p.Config = Config(p.Config)
	p.InstanceTemplate = InstanceTemplate(p.InstanceTemplate)
	return p
}

// Shape masks the secret values of a shape.
func Shape(s api.DeploymentShape) api.DeploymentShape {
	s.DeploymentShapePut = ShapePut(s.DeploymentShapePut)
	return s
}

// Deployment masks the secret values of a deployment's config and of its shapes.
func Deployment(d api.Deployment) api.Deployment {
	d.Config = Config(d.Config)
	if d.DeploymentShapes != nil {
		shapes := make(map[string]api.DeploymentShape, len(d.DeploymentShapes))
		for name, s := range d.DeploymentShapes {
			shapes[name] = Shape(s)
		}

		d.DeploymentShapes = shapes
	}

	return d
}

// Revision masks the secret values of a revision's shape and notes.
func Revision(r api.DeploymentShapeRevision) api.DeploymentShapeRevision {
	r.Shape = ShapePut(r.Shape)
	r.Notes = Text(r.Notes)
	return r
}

// mapFields are the diff paths under which the rest of the path is a map key
// (config.<key>, instance_template.devices.<device>.<key>).
var mapFields = []string{"config.", "instance_template.config.", "instance_template.devices."}

// secretField reports whether a diff path (shapes.Changes) names a secret value.
func secretField(field string) bool {
	if field == "instance_template.source.secret" {
		return true
	}

	for _, prefix := range mapFields {
		key, ok := strings.CutPrefix(field, prefix)
		if !ok {
			continue
		}

		if prefix == "instance_template.devices." {
			_, key, _ = strings.Cut(key, ".") // the device name is not the key
		}

		return SecretKey(key)
	}

	return false
}

// Changes returns a copy of a diff with the old and new values of secret fields masked
// (a value that is not set stays null, so a caller sees a secret added or removed).
func Changes(changes []api.DeploymentFieldChange) []api.DeploymentFieldChange {
	out := make([]api.DeploymentFieldChange, len(changes))
	for i, c := range changes {
		if secretField(c.Field) {
			if c.Old != nil {
				c.Old = Mask
			}

			if c.New != nil {
				c.New = Mask
			}
		}

		out[i] = c
	}

	return out
}

// assignment is the "key=" or "key: " before a value in free text.
var assignment = regexp.MustCompile(`([A-Za-z0-9_.\-]+)(\s*[=:]\s*)`)

// Text masks the values of secret keys assigned in free text (notes, activity reasons):
// "environment.DB_PASSWORD=hunter2" becomes "environment.DB_PASSWORD=[redacted]". A value
// runs to the next space, comma, semicolon or parenthesis, or is quoted.
func Text(s string) string {
	if !strings.ContainsAny(s, "=:") {
		return s
	}

	var out strings.Builder
	last := 0
	for _, m := range assignment.FindAllStringSubmatchIndex(s, -1) {
		if m[0] < last || !SecretKey(s[m[2]:m[3]]) {
			continue
		}

		end := valueEnd(s, m[1])
		out.WriteString(s[last:m[1]])
		if end > m[1] {
			out.WriteString(Mask)
		}

		last = end
	}

	out.WriteString(s[last:])
	return out.String()
}

// valueEnd is where the value starting at i ends.
func valueEnd(s string, i int) int {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		closing := strings.IndexByte(s[i+1:], s[i])
		if closing >= 0 {
			return i + closing + 2
		}

		return len(s)
	}

	end := strings.IndexAny(s[i:], " \t\n,;)")
	if end < 0 {
		return len(s)
	}

	return i + end
}

// Activity masks secret values in activity entries' reasons.
func Activity(entries []api.DeploymentActivity) []api.DeploymentActivity {
	out := make([]api.DeploymentActivity, len(entries))
	for i, e := range entries {
		e.Why = Text(e.Why)
		out[i] = e
	}

	return out
}
