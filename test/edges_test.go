package test

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The proposal's remaining edges (seed 004, issue 33), end to end over the real binaries.

// TestDeploymentListFilters lists deployments by name, config and project: the API's
// ?filter= (LXD's filter language) and ?all-projects=true, the client's methods and
// "lxd-deploy deployment list [<remote>:] [<filter>...] [--all-projects]" as "lxc list"
// takes them; bad filters are 400s that say what to write and change nothing.
func TestDeploymentListFilters(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestForcedDeploymentDeleteOnLXD checks DELETE /1.0/deployments/{deployment}?force=1 (and
// "lxd-deploy deployment delete --force") on LXD's own list: the instances of every shape
// of the deployment are gone from LXD, and nothing else is touched (another deployment's
// instance, an instance made by hand beside them, both still running). Without force it is
// a 409 that changes nothing.
func TestForcedDeploymentDeleteOnLXD(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	u := newCLIUser(t, env.d)
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("db", 0, 2)))
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}}))
	must(t, env.admin.CreateDeploymentShape("dep2", webShape("web", 0, 2)))
	t.Cleanup(func() { _ = env.admin.DeleteDeployment("dep2", true) })

	web1, web2, db1, other, byHand := env.name("web1"), env.name("web2"), env.name("db1"), env.name("other"), env.name("byhand")
	for _, launch := range []struct{ deployment, shape, name string }{{"dep1", "web", web1}, {"dep1", "web", web2}, {"dep1", "db", db1}, {"dep2", "web", other}} {
		op, err := env.admin.CreateDeploymentShapeInstance(launch.deployment, launch.shape, launch.name)
		must(t, err)
		must(t, op.Wait(context.Background()))
	}

	must(t, env.launchByHand(byHand))
	inLXD := func() map[string]string {
		t.Helper()
		instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		states := map[string]string{}
		for _, instance := range instances {
			if strings.HasPrefix(instance.Name, env.prefix+"-") {
				states[instance.Name] = instance.Status
			}
		}

		return states
	}

	before := inLXD()
	if len(before) != 5 {
		t.Fatalf("before the delete, LXD holds %v", before)
	}

	// Without force: a 409 with the count and what to do, and LXD is as it was.
	err := env.admin.DeleteDeployment("dep1", false)
	expectCode(t, err, 409, "delete without force")
	if err == nil || !contains(err.Error(), "still has 3 instances", "force") {
		t.Errorf("delete without force: %v", err)
	}

	u.fails([]string{"still has 3 instances", "force"}, "deployment", "delete", "dep1")
	if after := inLXD(); !maps.Equal(after, before) {
		t.Fatalf("a refused delete changed LXD: %v, was %v", after, before)
	}

	// With force, through the CLI.
	if out := u.ok("deployment", "delete", "dep1", "--force"); !contains(out, "dep1") {
		t.Errorf("delete --force printed %q", out)
	}

	after := inLXD()
	for _, gone := range []string{web1, web2, db1} {
		if _, ok := after[gone]; ok {
			t.Errorf("%s of dep1 is still in LXD after a forced delete: %v", gone, after)
		}
	}

	for _, kept := range []string{other, byHand} {
		if after[kept] != "Running" {
			t.Errorf("%s was touched by dep1's forced delete: %q (LXD holds %v)", kept, after[kept], after)
		}
	}

	_, _, err = env.admin.GetDeployment("dep1")
	expectCode(t, err, 404, "force-deleted deployment")
	dep2, _, err := env.admin.GetDeployment("dep2")
	must(t, err)
	if len(dep2.UsedBy) != 1 || !strings.HasSuffix(dep2.UsedBy[0], "/"+other) {
		t.Errorf("dep2 after dep1's forced delete: used_by %v", dep2.UsedBy)
	}

	instance, _, err := env.lxdConn.GetInstance(other)
	must(t, err)
	if instance.Config["user.lxd-deployd.deployment"] != "dep2" {
		t.Errorf("dep2's instance lost its tags: %v", instance.Config)
	}
}
