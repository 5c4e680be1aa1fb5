package api

import (
	"time"
)

// DeploymentManifest is one applied version of a deployment's templated config (seed 000's
// manifest): what was sent, what it expanded to, and why it was applied. A manifest is
// recorded every time a template is applied: on create, on PUT and on rollback.
type DeploymentManifest struct {
	// Name of the manifest, numbered per deployment
	// Read only: true
	// Example: manifest-3
	Name string `json:"name" yaml:"name"`

	// Why it was applied: "create", "update" or "rollback of <manifest>"
	// Read only: true
	// Example: rollback of manifest-1
	Cause string `json:"cause" yaml:"cause"`

	// When it was applied
	// Read only: true
	// Example: 2025-01-02T03:04:05Z
	CreatedAt time.Time `json:"created_at" yaml:"created_at"`

	// The config as sent (the deployment's template field)
	// Read only: true
	// Example: resources: [{name: web, type: web.jinja}]
	InputConfig string `json:"input_config" yaml:"input_config"`

	// The files sent with it, by import name
	// Read only: true
	// Example: {"web.jinja": "resources: ..."}
	Imports map[string]string `json:"imports" yaml:"imports"`

	// The expanded config: primitive resources (shapes) only, references resolved
	// Read only: true
	ExpandedConfig DeploymentManifestConfig `json:"expanded_config" yaml:"expanded_config"`

	// The layout: the tree of resources, templates with the properties they were expanded
	// with and the resources they expanded into
	// Read only: true
	Layout DeploymentManifestConfig `json:"layout" yaml:"layout"`
}

// DeploymentManifestConfig is a list of resources: a manifest's expanded config or layout.
type DeploymentManifestConfig struct {
	// The resources
	Resources []DeploymentManifestResource `json:"resources" yaml:"resources"`
}

// DeploymentManifestResource is one resource of an expanded config or of a layout.
type DeploymentManifestResource struct {
	// Name of the resource
	// Example: web
	Name string `json:"name" yaml:"name"`

	// Type of the resource: "shape" or a template
	// Example: web.jinja
	Type string `json:"type" yaml:"type"`

	// Properties of the resource (in a layout: set for templates only, as expanded)
	// Example: {"image": "debian/12"}
	Properties map[string]any `json:"properties,omitempty" yaml:"properties,omitempty"`

	// Resources a template expanded into (layouts only)
	Resources []DeploymentManifestResource `json:"resources,omitempty" yaml:"resources,omitempty"`
}

// DeploymentTemplatePlan is what applying a templated config does to a deployment's shapes:
// the answer of a dry run (?dry-run=1 on POST or PUT of a deployment, or on a rollback).
type DeploymentTemplatePlan struct {
	// Shapes to create, in creation order
	Create []DeploymentShapesPost `json:"create" yaml:"create"`

	// Shapes to update, field by field. Instances keep running: a new instance template
	// applies to instances created afterwards, and sizes stay the governor's
	Update []DeploymentShapeChange `json:"update" yaml:"update"`

	// Shapes an earlier manifest made that the config no longer has
	Delete []DeploymentShapeDeletion `json:"delete" yaml:"delete"`

	// Shapes the config has that need no change
	// Example: ["db"]
	Unchanged []string `json:"unchanged" yaml:"unchanged"`

	// Shapes of the deployment that no manifest made (created through the shapes API):
	// applying a template leaves them alone
	// Example: ["debug"]
	Unmanaged []string `json:"unmanaged" yaml:"unmanaged"`

	// The expanded config
	ExpandedConfig DeploymentManifestConfig `json:"expanded_config" yaml:"expanded_config"`

	// The layout
	Layout DeploymentManifestConfig `json:"layout" yaml:"layout"`

	// Warnings of the config's expansion (a schema's Deployment Manager type alias)
	Warnings []DeploymentTemplateWarning `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// DeploymentShapeChange is a shape a plan updates and what changes in it.
type DeploymentShapeChange struct {
	// Name of the shape
	// Example: web
	Name string `json:"name" yaml:"name"`

	// The changed fields
	Changes []DeploymentFieldChange `json:"changes" yaml:"changes"`
}

// DeploymentFieldChange is one changed field of a shape.
type DeploymentFieldChange struct {
	// The field: description, config.<key>, instance_template.<path>, scaling_minimum
	// or scaling_maximum
	// Example: instance_template.source.alias
	Field string `json:"field" yaml:"field"`

	// The current value (null: not set)
	// Example: debian/12
	Old any `json:"old" yaml:"old"`

	// The new value (null: removed)
	// Example: debian/13
	New any `json:"new" yaml:"new"`
}

// DeploymentShapeDeletion is a shape a plan deletes.
type DeploymentShapeDeletion struct {
	// Name of the shape
	// Example: worker
	Name string `json:"name" yaml:"name"`

	// Its instances: applying refuses to delete a shape that has any (409) unless forced,
	// and then deletes them first
	// Example: 2
	Instances int `json:"instances" yaml:"instances"`
}

// TemplateType is a resource type used by the latest manifests of a project's deployments
// (seed 000's types API).
type TemplateType struct {
	// The type
	// Example: web.jinja
	Name string `json:"name" yaml:"name"`

	// Whether the type is a template (a .jinja, .py or .star file, a URL, or a registry
	// reference); otherwise it is a primitive ("shape")
	// Example: true
	Template bool `json:"template" yaml:"template"`

	// How many resources of this type the latest manifests hold
	// Example: 3
	Instances int `json:"instances" yaml:"instances"`

	// The deployments using it
	// Example: ["shop"]
	Deployments []string `json:"deployments" yaml:"deployments"`
}

// TemplateTypeInstance is one resource of a type in the latest manifest of a deployment.
type TemplateTypeInstance struct {
	// Name of the resource
	// Example: shop-web
	Name string `json:"name" yaml:"name"`

	// Type of the resource
	// Example: tier.py
	Type string `json:"type" yaml:"type"`

	// Deployment the resource belongs to
	// Example: shop
	Deployment string `json:"deployment" yaml:"deployment"`

	// Manifest whose layout holds the resource
	// Example: manifest-2
	Manifest string `json:"manifest" yaml:"manifest"`

	// JSON path to the resource in the manifest's layout
	// Example: $.resources[0].resources[1]
	Path string `json:"path" yaml:"path"`
}

// DeploymentManifestURL returns the URL of a manifest of a deployment.
func DeploymentManifestURL(project string, deployment string, manifest string) string {
	return path(project, "deployments", deployment, "manifests", manifest)
}

// TemplateTypeURL returns the URL of a type of the types API.
func TemplateTypeURL(project string, typ string) string {
	return path(project, "types", typ)
}
