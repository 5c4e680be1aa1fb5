package client

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetDeploymentsWithFilter returns the project's deployments that match every filter, each
// "key=value" as LXD's client takes them ("name=web.*", "config.user.team=front"); values
// are case-insensitive anchored regular expressions, as in LXD.
func (s *Server) GetDeploymentsWithFilter(filters []string) ([]api.Deployment, error) {
	var deployments []api.Deployment
	_, err := s.queryStruct(http.MethodGet, s.withProject(path("deployments")+"?recursion=1"+filterQuery(filters)), nil, "", &deployments)
	return deployments, err
}

// GetDeploymentsAllProjectsWithFilter returns the deployments of every project that match
// every filter (see GetDeploymentsWithFilter).
func (s *Server) GetDeploymentsAllProjectsWithFilter(filters []string) ([]api.Deployment, error) {
	var deployments []api.Deployment
	_, err := s.queryStruct(http.MethodGet, path("deployments")+"?recursion=1&all-projects=true"+filterQuery(filters), nil, "", &deployments)
	return deployments, err
}

// filterQuery turns "key=value" filters into "&filter=key eq value and ...". Unlike LXD's
// client it quotes a value with spaces, which the server's parser would otherwise split.
func filterQuery(filters []string) string {
	var clauses []string
	for _, f := range filters {
		key, value, _ := strings.Cut(f, "=")
		if strings.ContainsAny(value, " \t") {
			value = `"` + value + `"`
		}

		clauses = append(clauses, key+" eq "+value)
	}

	if len(clauses) == 0 {
		return ""
	}

	return "&filter=" + url.QueryEscape(strings.Join(clauses, " and "))
}
