package rest

import (
	"net/http"
	"strconv"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/canonical/lxd/shared/filter"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Collection filters the LXD way: ?filter= takes LXD's query language ("name eq web and
// config.user.team eq front", values are case-insensitive anchored regular expressions),
// parsed and matched by LXD's own shared/filter, so an LXD user's filters mean here what
// they mean on /1.0/instances; ?all-projects=true lists every project, as LXD does.

// deploymentFilterView is what a deployment filter can name. LXD's matcher follows one
// inline struct only, and api.Deployment inlines two (DeploymentPost and DeploymentPut),
// so filters match this flat view instead; its yaml names are the API's field names.
type deploymentFilterView struct {
	Name               string            `yaml:"name"`
	Project            string            `yaml:"project"`
	Description        string            `yaml:"description"`
	GovernorWebhookURL string            `yaml:"governor_webhook_url"`
	Config             map[string]string `yaml:"config"`
}

// deploymentFilterFields lists what deploymentFilterView offers, for the error that names them.
const deploymentFilterFields = "name, project, description, governor_webhook_url, config.<key>"

// ParseFilter reads ?filter= (nil when absent); a malformed one is a 400 that shows the form.
func ParseFilter(r *http.Request) (*filter.ClauseSet, error) {
	expr := r.URL.Query().Get("filter")
	if expr == "" {
		return nil, nil
	}

	clauses, err := filter.Parse(expr, filter.QueryOperatorSet())
	if err != nil {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "invalid filter %q: %v: write it as LXD does, such as \"name eq web and config.user.team eq front\"", expr, err)
	}

	return clauses, nil
}

// FilterDeployments keeps the deployments the clauses match (all of them when clauses is
// nil). It is given what the caller may see, so that a filter cannot probe a value
// (a secret config value, a webhook URL's credentials) the caller is not shown.
func FilterDeployments(deployments []api.Deployment, clauses *filter.ClauseSet) ([]api.Deployment, error) {
	if clauses == nil {
		return deployments, nil
	}

	for _, clause := range clauses.Clauses {
		if clause.Operator != clauses.Ops.Equals && clause.Operator != clauses.Ops.NotEquals {
			return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "filter operator %q is not served: use eq or ne", clause.Operator)
		}
	}

	kept := []api.Deployment{}
	for _, d := range deployments {
		view := deploymentFilterView{Name: d.Name, Project: d.Project, Description: d.Description, GovernorWebhookURL: d.GovernorWebhookURL, Config: d.Config}
		if view.Config == nil {
			view.Config = map[string]string{}
		}

		ok, err := filter.Match(view, *clauses)
		if err != nil {
			return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "invalid filter: %v: deployments are filtered on %s", err, deploymentFilterFields)
		}

		if ok {
			kept = append(kept, d)
		}
	}

	return kept, nil
}

// ProjectsParam is the project scope of a collection GET: one project (?project=, default
// "default"), or every project with ?all-projects=true, which it returns as "" (the
// db filters' "any"). Naming both is refused, as LXD refuses it.
func ProjectsParam(r *http.Request) (string, error) {
	value := r.URL.Query().Get("all-projects")
	all := false
	if value != "" {
		var err error
		all, err = strconv.ParseBool(value)
		if err != nil {
			return "", lxdapi.StatusErrorf(http.StatusBadRequest, "all-projects must be true or false, got %q", value)
		}
	}

	if !all {
		return ProjectParam(r)
	}

	if r.URL.Query().Get("project") != "" {
		return "", lxdapi.StatusErrorf(http.StatusBadRequest, "cannot name a project when asking for all projects: drop ?project= or ?all-projects=true")
	}

	return "", nil
}
