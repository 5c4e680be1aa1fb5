package test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The proposal's remaining edges (seed 004, issue 33), end to end over the real binaries.

// TestDeploymentListFilters lists deployments by name, config and project: the API's
// ?filter= (LXD's filter language) and ?all-projects=true, the client's methods and
// "lxd-deploy deployment list [<remote>:] [<filter>...] [--all-projects]" as "lxc list"
// takes them; bad filters are 400s that say what to write and change nothing.
func TestDeploymentListFilters(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	admin := d.Unix(t)
	u := newCLIUser(t, d)
	u.ok("deployment", "create", "web1", "--description", "front end", "user.team=front")
	u.ok("deployment", "create", "web2", "user.team=back")
	u.ok("deployment", "create", "db")
	u.ok("--project", "p2", "deployment", "create", "web1")

	names := func(deployments []api.Deployment) []string {
		got := []string{}
		for _, dep := range deployments {
			got = append(got, dep.Project+"/"+dep.Name)
		}

		sort.Strings(got)
		return got
	}

	// The API, through the client.
	listed, err := admin.GetDeploymentsWithFilter([]string{"name=web.*"})
	must(t, err)
	if got := names(listed); !slices.Equal(got, []string{"default/web1", "default/web2"}) {
		t.Errorf("name=web.*: %v", got)
	}

	listed, err = admin.GetDeploymentsWithFilter([]string{"config.user.team=front", "description=front end"})
	must(t, err)
	if got := names(listed); !slices.Equal(got, []string{"default/web1"}) {
		t.Errorf("config and description: %v", got)
	}

	listed, err = admin.GetDeploymentsAllProjectsWithFilter([]string{"name=web1"})
	must(t, err)
	if got := names(listed); !slices.Equal(got, []string{"default/web1", "p2/web1"}) {
		t.Errorf("all projects, name=web1: %v", got)
	}

	var urls []string
	_, err = queryURLs(admin, "/1.0/deployments?all-projects=true&filter="+url.QueryEscape("name eq web1 or name eq db"), &urls)
	must(t, err)
	sort.Strings(urls)
	if !slices.Equal(urls, []string{"/1.0/deployments/db", "/1.0/deployments/web1", "/1.0/deployments/web1?project=p2"}) {
		t.Errorf("URLs across projects: %v", urls)
	}

	_, err = queryURLs(admin, "/1.0/deployments?filter="+url.QueryEscape("colour eq red"), &urls)
	expectCode(t, err, 400, "filter on an unknown field")
	if err == nil || !contains(err.Error(), "name, project, description") {
		t.Errorf("unknown field: %v", err)
	}

	_, err = queryURLs(admin, "/1.0/deployments?project=p2&all-projects=true", &urls)
	expectCode(t, err, 400, "project and all-projects")

	// The CLI, as lxc list.
	if out := u.ok("deployment", "list", "web", "-f", "csv"); out != "web1,front end,,\nweb2,,,\n" {
		t.Errorf("deployment list web: %q", out)
	}

	if out := u.ok("deployment", "list", "local:web2", "-f", "csv"); out != "web2,,,\n" {
		t.Errorf("deployment list local:web2: %q", out)
	}

	if out := u.ok("deployment", "list", "local:", "user.team=back", "-f", "csv"); out != "web2,,,\n" {
		t.Errorf("deployment list user.team=back: %q", out)
	}

	if out := u.ok("deployment", "list", "description=front end", "-f", "csv"); out != "web1,front end,,\n" {
		t.Errorf("deployment list description=front end: %q", out)
	}

	if out := u.ok("deployment", "list", "nope", "-f", "json"); out != "[]\n" {
		t.Errorf("deployment list nope: %q", out)
	}

	if out := u.ok("deployment", "list", "--all-projects", "web1", "-f", "csv"); out != "default,web1,front end,,\np2,web1,,,\n" {
		t.Errorf("deployment list --all-projects web1: %q", out)
	}

	table := u.ok("deployment", "list", "--all-projects")
	if !contains(table, "| PROJECT | NAME ", "| p2      | web1 ") {
		t.Errorf("deployment list --all-projects:\n%s", table)
	}

	if out := u.ok("--project", "p2", "deployment", "list", "-f", "csv"); out != "web1,,,\n" {
		t.Errorf("deployment list --project p2: %q", out)
	}

	u.fails([]string{"--project and --all-projects cannot be used together"}, "--project", "p2", "deployment", "list", "--all-projects")
	u.fails([]string{"invalid filter", "write it as LXD does"}, "deployment", "list", "name=")

	// Nothing above changed anything.
	listed, err = admin.GetDeploymentsAllProjectsWithFilter(nil)
	must(t, err)
	if got := names(listed); !slices.Equal(got, []string{"default/db", "default/web1", "default/web2", "p2/web1"}) {
		t.Errorf("after the filters: %v", got)
	}
}

// queryURLs GETs a collection's URLs.
func queryURLs(s *client.Server, path string, urls *[]string) (string, error) {
	resp, etag, err := s.Query("GET", path, nil, "")
	if err != nil {
		return "", err
	}

	return etag, json.Unmarshal(resp.Metadata, urls)
}

// TestCLIKeyGetProperty: "lxd-deploy deployment key get --property" prints the property it
// names (keys have only properties, so -p is accepted and changes nothing), and an unknown
// property is an error that lists the known ones.
func TestCLIKeyGetProperty(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	u := newCLIUser(t, d)
	gov := newIdentity(t)
	govCert := filepath.Join(t.TempDir(), "gov.crt")
	must(t, os.WriteFile(govCert, []byte(gov.CertPEM), 0o600))
	u.ok("config", "trust", "add", govCert, "--type", "deployments")
	u.ok("deployment", "create", "dep1")
	u.ok("deployment", "key", "create", "dep1", "k1", gov.Fingerprint, "--role", "read-only")
	u.okWithStdin("description: the watcher\nrole: read-only\n", "deployment", "key", "edit", "dep1", "k1")

	for _, flag := range []string{"--property", "-p", ""} {
		for property, want := range map[string]string{
			"name":                    "k1",
			"description":             "the watcher",
			"role":                    "read-only",
			"certificate_fingerprint": gov.Fingerprint,
		} {
			args := []string{"deployment", "key", "get", "dep1", "k1", property}
			if flag != "" {
				args = append(args, flag)
			}

			if out := u.ok(args...); out != want+"\n" {
				t.Errorf("key get %s %s: %q, want %q", property, flag, out, want)
			}
		}
	}

	u.fails([]string{"colour"}, "deployment", "key", "get", "dep1", "k1", "colour", "--property")
	u.fails([]string{`deployment key "nope" not found`}, "deployment", "key", "get", "dep1", "nope", "role", "--property")
}
