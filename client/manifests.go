package client

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ApplyOptions tune applying a templated config (doc/templates.md).
type ApplyOptions struct {
	// Force deletes the instances of shapes the config drops, instead of a 409.
	Force bool

	// DryRun only plans: nothing changes, and the plan is returned.
	DryRun bool
}

// query adds ?force=1 and ?dry-run=1 to a path.
func (o ApplyOptions) query(p string) string {
	separator := "?"
	if o.Force {
		p += separator + "force=1"
		separator = "&"
	}

	if o.DryRun {
		p += separator + "dry-run=1"
	}

	return p
}

// PlanDeploymentCreate says what creating a deployment from a templated config
// (req.Template) would do, creating nothing.
func (s *Server) PlanDeploymentCreate(req api.DeploymentsPost) (*api.DeploymentTemplatePlan, error) {
	var plan api.DeploymentTemplatePlan
	_, err := s.queryStruct(http.MethodPost, s.withProject(path("deployments")+"?dry-run=1"), req, "", &plan)
	if err != nil {
		return nil, err
	}

	return &plan, nil
}

// ApplyDeploymentTemplate replaces a deployment's writable fields with put and applies its
// templated config (put.Template) to the shapes, recording a manifest. A non-empty etag
// makes it fail with 412 if the deployment changed since it was read. With DryRun it
// changes nothing and returns the plan; otherwise the plan is nil.
func (s *Server) ApplyDeploymentTemplate(name string, put api.DeploymentPut, etag string, opts ApplyOptions) (*api.DeploymentTemplatePlan, error) {
	var plan *api.DeploymentTemplatePlan
	var target any
	if opts.DryRun {
		plan = &api.DeploymentTemplatePlan{}
		target = plan
	}

	_, err := s.queryStruct(http.MethodPut, s.withProject(opts.query(path("deployments", name))), put, etag, target)
	if err != nil {
		return nil, err
	}

	return plan, nil
}

// GetDeploymentManifestNames returns the names of a deployment's manifests, oldest first.
func (s *Server) GetDeploymentManifestNames(deployment string) ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "manifests")), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetDeploymentManifests returns a deployment's manifests, oldest first.
func (s *Server) GetDeploymentManifests(deployment string) ([]api.DeploymentManifest, error) {
	var manifests []api.DeploymentManifest
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "manifests")+"?recursion=1"), nil, "", &manifests)
	return manifests, err
}

// GetDeploymentManifest returns one manifest of a deployment.
func (s *Server) GetDeploymentManifest(deployment string, name string) (*api.DeploymentManifest, error) {
	var manifest api.DeploymentManifest
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments", deployment, "manifests", name)), nil, "", &manifest)
	if err != nil {
		return nil, err
	}

	return &manifest, nil
}

// RollbackDeployment re-applies the config of an earlier manifest and returns the new
// manifest recording it; with DryRun it changes nothing and returns the plan instead.
func (s *Server) RollbackDeployment(deployment string, manifest string, opts ApplyOptions) (*api.DeploymentManifest, *api.DeploymentTemplatePlan, error) {
	p := s.withProject(opts.query(path("deployments", deployment, "manifests", manifest, "rollback")))
	if opts.DryRun {
		var plan api.DeploymentTemplatePlan
		_, err := s.queryStruct(http.MethodPost, p, nil, "", &plan)
		if err != nil {
			return nil, nil, err
		}

		return nil, &plan, nil
	}

	var applied api.DeploymentManifest
	_, err := s.queryStruct(http.MethodPost, p, nil, "", &applied)
	if err != nil {
		return nil, nil, err
	}

	return &applied, nil, nil
}

// GetTemplateTypeNames returns the types used by the latest manifests of the project's
// deployments.
func (s *Server) GetTemplateTypeNames() ([]string, error) {
	var urls []string
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("types")), nil, "", &urls)
	if err != nil {
		return nil, err
	}

	return names(urls)
}

// GetTemplateTypes returns the types used by the latest manifests of the project's
// deployments, with their use.
func (s *Server) GetTemplateTypes() ([]api.TemplateType, error) {
	var types []api.TemplateType
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("types")+"?recursion=1"), nil, "", &types)
	return types, err
}

// GetTemplateTypeInstances returns the resources of a type ("all": of every type) in the
// latest manifests of the project's deployments.
func (s *Server) GetTemplateTypeInstances(typ string) ([]api.TemplateTypeInstance, error) {
	var instances []api.TemplateTypeInstance
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("types", typ, "instances")), nil, "", &instances)
	return instances, err
}
