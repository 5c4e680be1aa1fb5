package apply

import (
	"fmt"
	"sort"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// The resource types of the types API (seed 000): what the layouts of the latest manifests
// of a project's deployments use, and where.

// AllTypes is the type name that stands for every type in /1.0/types/{type}/instances.
const AllTypes = "all"

// isTemplateType says whether a type names a template rather than a primitive, by the
// expander's own rule.
func isTemplateType(typ string) bool {
	return registry.IsTemplateFile(typ) || registry.IsURL(typ) || registry.IsReference(typ)
}

// TypeInstances walks the layouts, depth first, and returns every resource of type typ
// (AllTypes: of any type), each with its path in its layout.
func TypeInstances(layouts []db.ManifestLayout, typ string) []api.TemplateTypeInstance {
	instances := []api.TemplateTypeInstance{}
	var walk func(l db.ManifestLayout, path string, resources []api.DeploymentManifestResource)
	walk = func(l db.ManifestLayout, path string, resources []api.DeploymentManifestResource) {
		for i, r := range resources {
			p := fmt.Sprintf("%s.resources[%d]", path, i)
			if typ == AllTypes || r.Type == typ {
				instances = append(instances, api.TemplateTypeInstance{Name: r.Name, Type: r.Type, Deployment: l.Deployment, Manifest: l.Manifest, Path: p})
			}

			walk(l, p, r.Resources)
		}
	}

	for _, l := range layouts {
		walk(l, "$", l.Layout.Resources)
	}

	return instances
}

// Types groups the layouts' resources by type, sorted by name.
func Types(layouts []db.ManifestLayout) []api.TemplateType {
	byName := map[string]*api.TemplateType{}
	for _, instance := range TypeInstances(layouts, AllTypes) {
		t := byName[instance.Type]
		if t == nil {
			t = &api.TemplateType{Name: instance.Type, Template: isTemplateType(instance.Type), Deployments: []string{}}
			byName[instance.Type] = t
		}

		t.Instances++
		if len(t.Deployments) == 0 || t.Deployments[len(t.Deployments)-1] != instance.Deployment {
			t.Deployments = append(t.Deployments, instance.Deployment)
		}
	}

	result := make([]api.TemplateType, 0, len(byName))
	for _, t := range byName {
		result = append(result, *t)
	}

	sort.Slice(result, func(i, j int) bool { return result[i].Name < result[j].Name })
	return result
}
