package templates

import (
	"errors"
	"fmt"
	"strings"
)

// ExpandError is every error of expansion: it says where (the template file, the resource
// path in the layout, the property) and what. The daemon maps it to a 400.
type ExpandError struct {
	// Template is the template file involved, as its imports key ("web.jinja",
	// "https://host/web.py", "github.com/acme/templates/web:v1/web.py"); empty for the config.
	Template string

	// Resource is the resource's path in the layout, names joined by "/" ("app/web").
	Resource string

	// Path is the property path inside the resource ("port", "config.limits.cpu").
	Path string

	// Msg says what is wrong and, where it can, what to do.
	Msg string

	// Err is the underlying cause, if any (ErrLimit for limits).
	Err error
}

// ErrLimit is wrapped by the errors of the limits (Limits): steps, time, output size,
// depth and resource count.
var ErrLimit = errors.New("expansion limit exceeded")

// Error formats: resource "app/web" (template web.jinja): property "port": <msg>.
func (e *ExpandError) Error() string {
	parts := []string{}
	switch {
	case e.Resource != "" && e.Template != "":
		parts = append(parts, fmt.Sprintf("resource %q (template %s)", e.Resource, e.Template))
	case e.Resource != "":
		parts = append(parts, fmt.Sprintf("resource %q", e.Resource))
	case e.Template != "":
		parts = append(parts, "template "+e.Template)
	}

	if e.Path != "" {
		parts = append(parts, fmt.Sprintf("property %q", e.Path))
	}

	return strings.Join(append(parts, e.Msg), ": ")
}

// Unwrap gives the cause.
func (e *ExpandError) Unwrap() error {
	return e.Err
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
		Err:      ErrLimit,
	}
}
