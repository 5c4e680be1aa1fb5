// Package api holds the types of the lxd-deployd REST API, split the way LXD splits its own:
// XsPost (create), XPost (rename), XPut (writable fields) and X (the full object).
package api

// DeploymentsPost represents the fields required to create a deployment.
type DeploymentsPost struct {
	DeploymentPost `yaml:",inline"`
	DeploymentPut  `yaml:",inline"`
}

// DeploymentPost represents the fields required to rename a deployment.
type DeploymentPost struct {
	// The name of the deployment
	// Example: myapp
	Name string `json:"name" yaml:"name"`
}

// DeploymentPut represents the modifiable fields of a deployment.
type DeploymentPut struct {
	// Description of the deployment
	// Example: My new app and its required services
	Description string `json:"description" yaml:"description"`

	// Deployment configuration map: user.* and webhook.* keys (see doc/api.md)
	// Example: {"user.mykey": "foo"}
	Config map[string]string `json:"config" yaml:"config"`

	// Governor webhook URL for platform-triggered scaling requests
	// Example: https://10.0.0.1/scale
	GovernorWebhookURL string `json:"governor_webhook_url" yaml:"governor_webhook_url"`

	// Templated config to apply on create or PUT (doc/templates.md): its expanded shapes
	// become the deployment's, recorded as a new manifest. Write only: GET shows the
	// applied configs under manifests, never here
	// Example: resources: [{name: web, type: web.jinja, properties: {image: debian/12}}]
	Template string `json:"template,omitempty" yaml:"template,omitempty"`

	// Files the template imports (templates, schemas, helpers), by import name. Write only
	// Example: {"web.jinja": "resources: ..."}
	TemplateImports map[string]string `json:"template_imports,omitempty" yaml:"template_imports,omitempty"`
}

// Deployment represents a deployment.
type Deployment struct {
	DeploymentPost `yaml:",inline"`
	DeploymentPut  `yaml:",inline"`

	// Project the deployment belongs to
	// Read only: true
	// Example: default
	Project string `json:"project" yaml:"project"`

	// Shapes of the deployment, keyed by name
	// Read only: true
	// Example: {"web": {...}}
	DeploymentShapes map[string]DeploymentShape `json:"deployment_shapes" yaml:"deployment_shapes"`

	// URLs of objects using this deployment
	// Read only: true
	// Example: ["/1.0/instances/c1", "/1.0/instances/c2"]
	UsedBy []string `json:"used_by" yaml:"used_by"`

	// LXD instances tagged as this deployment's that it has no record of, found by the
	// last reconcile; they are reported, never deleted
	// Read only: true
	// Example: ["/1.0/instances/web9"]
	OrphanedInstances []string `json:"orphaned_instances" yaml:"orphaned_instances"`

	// Set while every trigger of the deployment is suspended (the kill switch: POST
	// /1.0/deployments/{deployment}/triggers/suspend), with since when, by whom and why
	// Read only: true
	TriggersSuspended *DeploymentTriggersSuspended `json:"triggers_suspended,omitempty" yaml:"triggers_suspended,omitempty"`
}

// Writable returns the modifiable fields of the deployment.
func (d *Deployment) Writable() DeploymentPut {
	return d.DeploymentPut
}
