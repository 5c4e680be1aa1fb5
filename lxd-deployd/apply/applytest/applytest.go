// Package applytest holds the templated config the apply engine's tests and the API's
// tests both expand: a Jinja template making one shape per tier.
package applytest

import "strings"

// AppJinja is the template, imported as app.jinja: one shape per tier of its properties.
const AppJinja = `resources:
{% for tier in properties['tiers'] %}
- name: {{ env['deployment'] }}-{{ tier['name'] }}
  type: shape
  properties:
    description: {{ tier['name'] }} of {{ env['deployment'] }} in {{ env['project'] }}
    instance_template:
      source: {type: image, alias: {{ properties['image'] }}}
    scaling_minimum: 0
    scaling_maximum: {{ tier['max'] }}
{% endfor %}
`

// AppConfig is a config using AppJinja with image and tiers given as "name:max".
func AppConfig(image string, tiers ...string) string {
	config := "resources:\n- name: app\n  type: app.jinja\n  properties:\n    image: " + image + "\n    tiers:\n"
	for _, tier := range tiers {
		name, max, _ := strings.Cut(tier, ":")
		config += "    - {name: " + name + ", max: " + max + "}\n"
	}

	return config
}
