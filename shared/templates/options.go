package templates

import (
	"context"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// Options tune one expansion. The zero value is usable: no fetcher, default limits.
type Options struct {
	// Env is what templates see as env (besides name and type, set per resource).
	Env Env

	// Limits bound each template and the whole expansion.
	Limits Limits

	// Fetch resolves URL and registry types that imports does not already hold (see
	// registry.Prefix for where it looks first). Nil: such types are an error. The CLI
	// passes a registry.Fetcher; the daemon one limited to its configured registries.
	Fetch Fetcher

	// StrictUndefined renders Jinja templates with Jinja's StrictUndefined: a missing name,
	// key or attribute is an error where it is looked up. Without it (and without the
	// config's own strict_undefined: true), Jinja2's default Undefined applies, as in
	// Deployment Manager: it is falsy and renders as nothing, with a warning.
	StrictUndefined bool
}

// Env is the deployment-level part of a template's env.
type Env struct {
	// Deployment is the name of the deployment being expanded.
	Deployment string

	// Project is the LXD project of the deployment.
	Project string
}

// Fetcher fetches a template that is referenced by URL or registry reference. A
// *registry.Fetcher is one.
type Fetcher interface {
	Fetch(ctx context.Context, typ string) (*registry.Bundle, error)
}

// Limits bound expansion so that a config cannot make the CLI or the daemon work, wait or
// allocate without end. Zero fields take the defaults (DefaultLimits).
type Limits struct {
	// Steps bounds the work of one template invocation: Starlark execution steps, or for
	// Jinja loop iterations, macro calls and range() elements.
	Steps int64

	// Timeout bounds the wall-clock time of one template invocation.
	Timeout time.Duration

	// OutputBytes caps the output of one template invocation (its YAML text, or the size of
	// the data it returns), and any one string or list it builds.
	OutputBytes int

	// Depth caps how deeply templates nest (a config's template is depth 1).
	Depth int

	// Resources caps the number of expanded (primitive) resources of the whole config.
	Resources int
}

// DefaultLimits are the limits applied to zero fields of Limits.
var DefaultLimits = Limits{
	Steps:       10_000_000,
	Timeout:     10 * time.Second,
	OutputBytes: 8 << 20,
	Depth:       16,
	Resources:   100_000,
}

func (l Limits) withDefaults() Limits {
	if l.Steps <= 0 {
		l.Steps = DefaultLimits.Steps
	}

	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}

	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultLimits.OutputBytes
	}

	if l.Depth <= 0 {
		l.Depth = DefaultLimits.Depth
	}

	if l.Resources <= 0 {
		l.Resources = DefaultLimits.Resources
	}

	return l
}
