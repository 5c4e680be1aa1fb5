package templates

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Problem is one thing wrong with a config: a schema violation, or the error that stopped
// expansion. It is the API's type, so that an error crosses the API (and a process
// boundary) as it is.
type Problem = api.DeploymentTemplateProblem

// Warning is something a config does that works but should change (a schema's Deployment
// Manager type alias), naming the file and line.
type Warning = api.DeploymentTemplateWarning

// ExpandError is every error of expansion: it says where (the template file, the resource
// path in the layout, the property) and what. Its fields are exported with JSON tags so
// that it can be sent as it is (the API's error metadata is made from it, see API) and read
// back: only Err, the cause, does not travel, and Limit stands in for ErrLimit. The daemon
// maps it to a 400.
type ExpandError struct {
	// Template is the template file involved, as its imports key ("web.jinja",
	// "https://host/web.py", "github.com/acme/templates/web:v1/web.py"); empty for the config.
	Template string `json:"template,omitempty"`

	// Resource is the resource's path in the layout, names joined by "/" ("app/web").
	Resource string `json:"resource,omitempty"`

	// Path is the property path inside the resource ("port", "config.limits.cpu").
	Path string `json:"property,omitempty"`

	// Msg says what is wrong and, where it can, what to do. With several Problems it is
	// their summary.
	Msg string `json:"message"`

	// Problems lists every problem when there are several (all the schema violations of a
	// resource's properties), sorted by property; empty when Msg is the one problem.
	Problems []Problem `json:"problems,omitempty"`

	// Warnings are the warnings of the expansion up to the error.
	Warnings []Warning `json:"warnings,omitempty"`

	// Limit says that a limit (Limits) was exceeded: the error then wraps ErrLimit.
	Limit bool `json:"limit,omitempty"`

	// Err is the underlying cause, if any. It is not serialised.
	Err error `json:"-"`
}

// ErrLimit is wrapped by the errors of the limits (Limits): steps, time, output size,
// depth and resource count.
var ErrLimit = errors.New("expansion limit exceeded")

// Error formats: resource "app/web" (template web.jinja): property "port": <msg>. With
// several problems it is one line still: the summary, then each problem's property and rule.
func (e *ExpandError) Error() string {
	text := e.location()
	if len(e.Problems) > 1 {
		brief := make([]string, 0, len(e.Problems))
		for _, p := range e.Problems {
			item := p.Message
			if p.Property != "" {
				item = fmt.Sprintf("%q", p.Property)
				if p.Rule != "" {
					item += " (" + p.Rule + ")"
				}
			}

			brief = append(brief, item)
		}

		text += ": " + strings.Join(brief, ", ")
	}

	return text
}

// Detail formats the error over several lines when it has several problems: the summary,
// then each problem on a line of its own, as the CLI prints it.
func (e *ExpandError) Detail() string {
	text := e.location()
	if len(e.Problems) > 1 {
		for _, p := range e.Problems {
			text += "\n  " + p.String()
		}
	}

	return text
}

// location is the error's first line: where, then the message.
func (e *ExpandError) location() string {
	parts := []string{}
	// A message that starts by naming the template needs it only once.
	namesTemplate := e.Template != "" && strings.HasPrefix(e.Msg, "template "+e.Template+" ")
	switch {
	case e.Resource != "" && e.Template != "" && !namesTemplate:
		parts = append(parts, fmt.Sprintf("resource %q (template %s)", e.Resource, e.Template))
	case e.Resource != "":
		parts = append(parts, fmt.Sprintf("resource %q", e.Resource))
	case e.Template != "" && !namesTemplate:
		parts = append(parts, "template "+e.Template)
	}

	if e.Path != "" {
		parts = append(parts, fmt.Sprintf("property %q", e.Path))
	}

	return strings.Join(append(parts, e.Msg), ": ")
}

// Unwrap gives the cause; ErrLimit for a limit error read back from JSON.
func (e *ExpandError) Unwrap() error {
	if e.Err == nil && e.Limit {
		return ErrLimit
	}

	return e.Err
}

// API is the error as the API's error metadata: its problems (itself, when it has just
// one) and warnings.
func (e *ExpandError) API() api.DeploymentTemplateError {
	out := api.DeploymentTemplateError{Template: e.Template, Resource: e.Resource, Problems: e.Problems, Warnings: e.Warnings}
	if len(out.Problems) == 0 {
		out.Problems = []Problem{{Template: e.Template, Resource: e.Resource, Property: e.Path, Message: e.Msg}}
	}

	return out
}

// where is the location of the resource being expanded, to build errors from.
type where struct {
	template string
	resource string
}

func (w where) errorf(format string, args ...any) *ExpandError {
	return &ExpandError{Template: w.template, Resource: w.resource, Msg: fmt.Sprintf(format, args...)}
}

func (w where) propertyErrorf(path string, format string, args ...any) *ExpandError {
	return &ExpandError{Template: w.template, Resource: w.resource, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// limitError names the limit that was hit and how to get past it.
func (w where) limitError(what string, limit any, hint string) *ExpandError {
	return &ExpandError{
		Template: w.template,
		Resource: w.resource,
		Msg:      fmt.Sprintf("%s limit (%v) exceeded: %s", what, limit, hint),
		Limit:    true,
		Err:      ErrLimit,
	}
}
