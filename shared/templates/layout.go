package templates

// Layout is the tree of a config's resources as expansion found it (Deployment Manager's
// layout): each template resource with the properties it was expanded with and the
// resources it expanded into. It is kept because the flat expanded config loses what
// belongs to what.
type Layout struct {
	Resources []LayoutResource `json:"resources" yaml:"resources"`
}

// LayoutResource is one node of the layout.
type LayoutResource struct {
	// Name of the resource
	// Example: web
	Name string `json:"name" yaml:"name"`

	// Type of the resource
	// Example: web.jinja
	Type string `json:"type" yaml:"type"`

	// Properties the template was expanded with, defaults applied (templates only)
	Properties map[string]any `json:"properties,omitempty" yaml:"properties,omitempty"`

	// Resources the template expanded into (templates only)
	Resources []LayoutResource `json:"resources,omitempty" yaml:"resources,omitempty"`
}
