package api

import (
	"fmt"
	"strings"
)

// DeploymentTemplateError is the metadata of the 400 answer to a templated config that does
// not expand (POST or PUT of a deployment with a template, a rollback): where it failed and
// every problem found there, one entry each. The answer's error message is a one-line
// summary of the same.
type DeploymentTemplateError struct {
	// Template file where expansion failed ("" for the config itself)
	// Example: web.jinja
	Template string `json:"template,omitempty" yaml:"template,omitempty"`

	// Resource being expanded, as its path in the layout
	// Example: app/web
	Resource string `json:"resource,omitempty" yaml:"resource,omitempty"`

	// Every problem found, at least one: all the schema violations of a resource's
	// properties, or the one error that stopped expansion
	Problems []DeploymentTemplateProblem `json:"problems" yaml:"problems"`

	// Warnings collected before expansion stopped (see DeploymentTemplateWarning)
	Warnings []DeploymentTemplateWarning `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// DeploymentTemplateProblem is one thing wrong with a templated config.
type DeploymentTemplateProblem struct {
	// Template file involved ("" for the config itself)
	// Example: web.jinja
	Template string `json:"template,omitempty" yaml:"template,omitempty"`

	// Resource, as its path in the layout
	// Example: app/web
	Resource string `json:"resource,omitempty" yaml:"resource,omitempty"`

	// Property path inside the resource's properties
	// Example: config.limits.cpu
	Property string `json:"property,omitempty" yaml:"property,omitempty"`

	// Schema rule broken, for a schema violation
	// Example: type
	Rule string `json:"rule,omitempty" yaml:"rule,omitempty"`

	// Schema file whose rule is broken, for a schema violation
	// Example: web.jinja.schema
	Schema string `json:"schema,omitempty" yaml:"schema,omitempty"`

	// What is wrong and, where it can say, what to do
	// Example: '80' is not of type 'integer' (schema rule "type" of web.jinja.schema)
	Message string `json:"message" yaml:"message"`
}

// String formats the problem without its template and resource: property "port": <message>.
func (p DeploymentTemplateProblem) String() string {
	if p.Property == "" {
		return p.Message
	}

	return fmt.Sprintf("property %q: %s", p.Property, p.Message)
}

// DeploymentTemplateWarning is something a templated config does that works but should
// change, such as a schema's Deployment Manager type alias (type: int). Warnings are in the
// dry-run plan, the answer of an apply, and the metadata of an expansion error.
type DeploymentTemplateWarning struct {
	// File the warning is about
	// Example: web.py.schema
	File string `json:"file" yaml:"file"`

	// Line in File, from 1 (0: unknown)
	// Example: 4
	Line int `json:"line,omitempty" yaml:"line,omitempty"`

	// What to change
	// Example: type "int" is not a JSON Schema type: read as "integer" (a Deployment Manager alias); write integer
	Message string `json:"message" yaml:"message"`
}

// String formats the warning as file:line: message.
func (w DeploymentTemplateWarning) String() string {
	where := w.File
	if w.Line > 0 {
		where = fmt.Sprintf("%s:%d", w.File, w.Line)
	}

	return strings.TrimPrefix(where+": "+w.Message, ": ")
}

// DeploymentTemplateResult is the answer of a PUT that applied a templated config.
type DeploymentTemplateResult struct {
	// Warnings of the config's expansion
	Warnings []DeploymentTemplateWarning `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// DeploymentCreated is the answer of creating a deployment: its webhook secret (shown
// once) and, when it was created from a templated config, the expansion's warnings.
type DeploymentCreated struct {
	DeploymentWebhookSecret `yaml:",inline"`

	DeploymentTemplateResult `yaml:",inline"`
}
