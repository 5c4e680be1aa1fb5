// Package templates expands templated configs into resources, the way Kubernetes
// Deployment Manager did (seed 000), in pure Go and sandboxed, for both the daemon and the
// CLI. README.md beside this file describes the config language; in short:
//
//	imports:                      # files the config uses (the CLI gathers them)
//	- path: helpers/macros.jinja
//	properties:                   # deployment-level values, used as $(properties.PATH)
//	  image: debian/12
//	defaults:                     # defaults by type, for everything below (seed 003)
//	  shape: {scaling_maximum: 3}
//	resources:
//	- name: web                   # unique in its config or template
//	  type: web.jinja             # a template: .jinja, .py, .star, a URL or a reference
//	  properties: {count: 2}
//	- name: db
//	  type: shape                 # anything else is a primitive and passes through
//	  properties: {description: "next to $(ref.web-0.description)"}
//
// Expand expands a config recursively until only primitives remain and returns the
// expanded config, the layout and the creation order; Shapes turns that into the
// DeploymentShapePut values a deployment applies, refusing other primitives. Package
// registry fetches templates from registries and URLs.
package templates
