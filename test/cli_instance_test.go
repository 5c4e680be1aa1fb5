package test

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestCLIInstanceFlow drives "lxd-deploy deployment shape instance" over the local unix
// remote against the private LXD: launch up to the maximum, list, show, stop and start,
// delete down to the minimum, with LXD's own view checked after each change.
func TestCLIInstanceFlow(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 1, 2)
	u := newCLIUser(t, env.d)
	web1, web2, web3 := env.name("web1"), env.name("web2"), env.name("web3")
	instance := func(args ...string) []string {
		return append([]string{"deployment", "shape", "instance"}, args...)
	}

	// Launch: progress on stderr (plain lines, stderr is not a terminal), nothing on stdout.
	r := u.run("", instance("launch", "local:dep1", "web", web1)...)
	if r.code != 0 || r.stdout != "" || r.stderr != "Launching "+web1+"\nInstance "+web1+" launched\n" {
		t.Fatalf("launch: exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}

	u.ok(instance("launch", "dep1", "web", web2)...)
	u.fails([]string{"shape web is at its scaling maximum (2)"}, instance("launch", "dep1", "web", web3)...)
	u.fails([]string{`instance name "3bad" must not start with a digit`}, instance("launch", "dep1", "web", "3bad")...)
	live := env.lxdInstances(t)
	if len(live) != 2 || live[web1].Status != "Running" || live[web2].Status != "Running" {
		t.Fatalf("LXD after two launches: %v", live)
	}

	// List, table and json.
	table := u.ok(instance("list", "dep1", "web")...)
	if !contains(table, "| NAME", "| STATUS  | STATE   | CREATED", "| TEMPLATE", "| "+web1+" | Running | created |", "| "+web2+" | Running | created |") {
		t.Errorf("instance list:\n%s", table)
	}

	var listed []api.DeploymentInstance
	must(t, json.Unmarshal([]byte(u.ok(instance("list", "local:dep1", "web", "-f", "json")...)), &listed))
	if len(listed) != 2 {
		t.Fatalf("instance list json: %+v", listed)
	}

	for _, i := range listed {
		if i.Status != "Running" || i.State != "created" || i.Shape != "web" || i.TemplateHash == "" {
			t.Errorf("listed instance: %+v", i)
		}
	}

	if out := u.ok(instance("list", "dep1", "web", "-f", "csv")...); !contains(out, web1+",Running,created,", web2+",Running,created,") {
		t.Errorf("instance list csv: %q", out)
	}

	// Show carries LXD's live state.
	shown := u.ok(instance("show", "dep1", "web", web1)...)
	var one api.DeploymentInstance
	must(t, yaml.Unmarshal([]byte(shown), &one))
	if one.Name != web1 || one.Status != "Running" || one.LiveState == nil || one.LiveState.Processes < 1 || !strings.Contains(shown, "live_state:") {
		t.Errorf("instance show:\n%s", shown)
	}

	u.fails([]string{"not found"}, instance("show", "dep1", "web", env.name("nope"))...)

	// Stop and start change LXD's status.
	r = u.run("", instance("stop", "dep1", "web", web1, "--force", "--timeout", "10")...)
	if r.code != 0 || r.stdout != "" || r.stderr != "Stopping "+web1+"\nInstance "+web1+" stopped\n" {
		t.Fatalf("stop: exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}

	if status := env.lxdInstances(t)[web1].Status; status != "Stopped" {
		t.Fatalf("after stop: %s", status)
	}

	if out := u.ok(instance("list", "dep1", "web", "-f", "csv")...); !contains(out, web1+",Stopped,created,") {
		t.Errorf("instance list after stop: %q", out)
	}

	u.ok(instance("start", "dep1", "web", web1)...)
	if status := env.lxdInstances(t)[web1].Status; status != "Running" {
		t.Fatalf("after start: %s", status)
	}

	// Delete down to the minimum, and no further.
	r = u.run("", instance("delete", "dep1", "web", web2)...)
	if r.code != 0 || r.stdout != "" || r.stderr != "Deleting "+web2+"\nInstance "+web2+" deleted\n" {
		t.Fatalf("delete: exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}

	u.fails([]string{"shape web is at its scaling minimum (1)"}, instance("delete", "dep1", "web", web1)...)
	live = env.lxdInstances(t)
	if _, ok := live[web1]; len(live) != 1 || !ok {
		t.Fatalf("LXD after delete: %v", live)
	}
}
