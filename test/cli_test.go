package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestCLIDeploymentFlow is the acceptance flow of the CLI over the local unix socket:
// deployments, shapes, the trust store and keys, in every output format, then the error
// cases, with every change checked through the Go client.
func TestCLIDeploymentFlow(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	admin := d.Unix(t)
	u := newCLIUser(t, d)

	// Create.
	if out := u.ok("deployment", "create", "dep1", "--description", "My app", "user.team=web"); out != "Deployment dep1 created\n" {
		t.Errorf("create printed %q", out)
	}

	u.ok("deployment", "shape", "create", "dep1", "web", "--from-image", "busybox", "--scaling-min", "1", "--scaling-max", "3")

	gov := newIdentity(t)
	govCert := filepath.Join(t.TempDir(), "gov.crt")
	must(t, os.WriteFile(govCert, []byte(gov.CertPEM), 0o600))
	out := u.ok("config", "trust", "add", govCert, "--type", "deployments")
	if !contains(out, gov.Fingerprint) {
		t.Errorf("trust add printed %q, want the fingerprint", out)
	}

	u.ok("deployment", "key", "create", "dep1", "k1", gov.Fingerprint, "--role", "admin")

	deployment, _, err := admin.GetDeployment("dep1")
	must(t, err)
	if deployment.Description != "My app" || deployment.Config["user.team"] != "web" {
		t.Errorf("created deployment: %+v", deployment)
	}

	shape, _, err := admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	source := shape.InstanceTemplate.Source
	if shape.ScalingMinimum != 1 || shape.ScalingMaximum != 3 || source.Type != "image" || source.Alias != "busybox" || shape.InstanceTemplate.Type != lxdapi.InstanceTypeContainer {
		t.Errorf("created shape: %+v", shape)
	}

	cert, _, err := admin.GetCertificate(gov.Fingerprint)
	must(t, err)
	if cert.Type != api.CertificateTypeDeployments {
		t.Errorf("trusted certificate has type %q", cert.Type)
	}

	key, _, err := admin.GetDeploymentKey("dep1", "k1")
	must(t, err)
	if key.Role != api.DeploymentKeyRoleAdmin || key.CertificateFingerprint != gov.Fingerprint {
		t.Errorf("created key: %+v", key)
	}

	// List, in every format.
	short := gov.Fingerprint[:12]
	table := u.ok("deployment", "list")
	if !contains(table, "| NAME | DESCRIPTION | SHAPES | WEBHOOK |", "| dep1 | My app      | web    |         |") {
		t.Errorf("deployment list:\n%s", table)
	}

	if out := u.ok("deployment", "list", "local:", "--format", "csv"); out != "dep1,My app,web,\n" {
		t.Errorf("deployment list csv: %q", out)
	}

	var listed []api.Deployment
	must(t, json.Unmarshal([]byte(u.ok("deployment", "list", "-f", "json")), &listed))
	if len(listed) != 1 || listed[0].Name != "dep1" || listed[0].DeploymentShapes["web"].ScalingMaximum != 3 {
		t.Errorf("deployment list json: %+v", listed)
	}

	listed = nil
	must(t, yaml.Unmarshal([]byte(u.ok("deployment", "list", "-f", "yaml")), &listed))
	if len(listed) != 1 || listed[0].Description != "My app" {
		t.Errorf("deployment list yaml: %+v", listed)
	}

	if out := u.ok("deployment", "list", "-f", "compact"); !contains(out, "NAME", "dep1") || strings.Contains(out, "+--") {
		t.Errorf("deployment list compact:\n%s", out)
	}

	table = u.ok("deployment", "shape", "list", "dep1")
	if !contains(table, "| NAME | MIN | MAX | CURRENT | SOURCE        | DESCRIPTION |", "| web  | 1   | 3   | 0       | image:busybox |             |") {
		t.Errorf("shape list:\n%s", table)
	}

	if out := u.ok("deployment", "shape", "list", "dep1", "-f", "csv"); out != "web,1,3,0,image:busybox,\n" {
		t.Errorf("shape list csv: %q", out)
	}

	var shapes []api.DeploymentShape
	must(t, json.Unmarshal([]byte(u.ok("deployment", "shape", "list", "dep1", "-f", "json")), &shapes))
	if len(shapes) != 1 || shapes[0].Name != "web" {
		t.Errorf("shape list json: %+v", shapes)
	}

	if out := u.ok("deployment", "key", "list", "dep1", "-f", "csv"); out != "k1,admin,"+short+",\n" {
		t.Errorf("key list csv: %q", out)
	}

	var keys []api.DeploymentKey
	must(t, yaml.Unmarshal([]byte(u.ok("deployment", "key", "list", "dep1", "-f", "yaml")), &keys))
	if len(keys) != 1 || keys[0].CertificateFingerprint != gov.Fingerprint {
		t.Errorf("key list yaml: %+v", keys)
	}

	if out := u.ok("config", "trust", "list", "-f", "csv"); !contains(out, "deployments,"+short+"\n") {
		t.Errorf("trust list csv: %q", out)
	}

	// Show.
	var shown api.Deployment
	must(t, yaml.Unmarshal([]byte(u.ok("deployment", "show", "dep1")), &shown))
	if shown.Name != "dep1" || shown.Config["user.team"] != "web" || shown.Project != "default" {
		t.Errorf("deployment show: %+v", shown)
	}

	var shownShape api.DeploymentShape
	must(t, yaml.Unmarshal([]byte(u.ok("deployment", "shape", "show", "dep1", "web")), &shownShape))
	if shownShape.InstanceTemplate.Source.Alias != "busybox" {
		t.Errorf("shape show: %+v", shownShape)
	}

	if out := u.ok("deployment", "key", "show", "dep1", "k1"); !contains(out, "role: admin", "certificate_fingerprint: "+gov.Fingerprint) {
		t.Errorf("key show:\n%s", out)
	}

	if out := u.ok("config", "trust", "show", short); !contains(out, "type: deployments") {
		t.Errorf("trust show:\n%s", out)
	}

	testCLIGetSetUnset(t, d, u)
	testCLIEdit(t, d, u)
	testCLIErrors(t, u, govCert)
	testCLIRenameDelete(t, d, u, gov.Fingerprint)
}

// testCLIGetSetUnset checks get, set and unset on deployments, shapes and keys.
func testCLIGetSetUnset(t *testing.T, d *daemon, u *cliUser) {
	admin := d.Unix(t)
	if out := u.ok("deployment", "get", "dep1", "user.team"); out != "web\n" {
		t.Errorf("get user.team: %q", out)
	}

	if out := u.ok("deployment", "get", "dep1", "description", "--property"); out != "My app\n" {
		t.Errorf("get --property description: %q", out)
	}

	u.ok("deployment", "set", "dep1", "user.a=1", "user.b=2")
	u.ok("deployment", "set", "dep1", "user.c", "3") // lxc's "key value" form
	u.ok("deployment", "unset", "dep1", "user.a")
	u.ok("deployment", "set", "dep1", "--property", "governor_webhook_url=https://gov.example/scale", "description=Renamed app")
	deployment, _, err := admin.GetDeployment("dep1")
	must(t, err)
	if deployment.Config["user.b"] != "2" || deployment.Config["user.c"] != "3" || deployment.Config["user.team"] != "web" || deployment.Config["user.a"] != "" {
		t.Errorf("config after set/unset: %v", deployment.Config)
	}

	if deployment.Description != "Renamed app" || deployment.GovernorWebhookURL != "https://gov.example/scale" {
		t.Errorf("properties after set: %+v", deployment.DeploymentPut)
	}

	u.ok("deployment", "unset", "dep1", "governor_webhook_url", "-p")
	deployment, _, err = admin.GetDeployment("dep1")
	must(t, err)
	if deployment.GovernorWebhookURL != "" {
		t.Errorf("webhook after unset: %q", deployment.GovernorWebhookURL)
	}

	u.ok("deployment", "shape", "set", "dep1", "web", "scaling_maximum=5", "-p")
	u.ok("deployment", "shape", "set", "dep1", "web", "user.tier=front")
	if out := u.ok("deployment", "shape", "get", "dep1", "web", "scaling_maximum", "-p"); out != "5\n" {
		t.Errorf("shape get scaling_maximum: %q", out)
	}

	if out := u.ok("deployment", "shape", "get", "dep1", "web", "user.tier"); out != "front\n" {
		t.Errorf("shape get user.tier: %q", out)
	}

	u.ok("deployment", "shape", "unset", "dep1", "web", "user.tier")
	shape, _, err := admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingMaximum != 5 || len(shape.Config) != 0 {
		t.Errorf("shape after set/unset: max %d config %v", shape.ScalingMaximum, shape.Config)
	}

	u.fails([]string{"scaling_maximum (5) must be at least scaling_minimum (9)"}, "deployment", "shape", "set", "dep1", "web", "scaling_minimum=9", "-p")
	u.fails([]string{"read-only"}, "deployment", "shape", "set", "dep1", "web", "scaling_current=1", "-p")
	u.fails([]string{`"user.nope" is not set`}, "deployment", "unset", "dep1", "user.nope")
	u.fails([]string{"is not of the form key=value"}, "deployment", "set", "dep1", "user.a=1", "user.b")
	u.fails([]string{"governor_webhook_url", "http"}, "deployment", "set", "dep1", "governor_webhook_url=ftp://x", "-p")

	if out := u.ok("deployment", "key", "get", "dep1", "k1", "role"); out != "admin\n" {
		t.Errorf("key get role: %q", out)
	}
}

// testCLIEdit checks edit from stdin, including that a change made between the read and
// the write is refused (412) rather than overwritten.
func testCLIEdit(t *testing.T, d *daemon, u *cliUser) {
	admin := d.Unix(t)
	shown := u.ok("deployment", "show", "dep1")
	u.okWithStdin(strings.Replace(shown, "description: Renamed app", "description: Edited app", 1), "deployment", "edit", "dep1")
	deployment, _, err := admin.GetDeployment("dep1")
	must(t, err)
	if deployment.Description != "Edited app" || deployment.Config["user.team"] != "web" {
		t.Errorf("after edit: %+v", deployment.DeploymentPut)
	}

	u.okWithStdin("description: Only writable fields\nconfig:\n  user.x: \"1\"\n", "deployment", "edit", "dep1")
	deployment, _, err = admin.GetDeployment("dep1")
	must(t, err)
	if deployment.Description != "Only writable fields" || len(deployment.Config) != 1 || deployment.Config["user.x"] != "1" {
		t.Errorf("after edit with writable fields: %+v", deployment.DeploymentPut)
	}

	shapeYAML := u.ok("deployment", "shape", "show", "dep1", "web")
	u.okWithStdin(strings.Replace(shapeYAML, "scaling_maximum: 5", "scaling_maximum: 4", 1), "deployment", "shape", "edit", "dep1", "web")
	shape, _, err := admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingMaximum != 4 || shape.InstanceTemplate.Source.Alias != "busybox" {
		t.Errorf("after shape edit: %+v", shape.DeploymentShapePut)
	}

	u.okWithStdin("description: governor key\nrole: read-only\n", "deployment", "key", "edit", "dep1", "k1")
	key, _, err := admin.GetDeploymentKey("dep1", "k1")
	must(t, err)
	if key.Role != api.DeploymentKeyRoleReadOnly || key.Description != "governor key" {
		t.Errorf("after key edit: %+v", key)
	}

	r := u.run("descriptoin: typo\n", "deployment", "edit", "dep1")
	if r.code != 1 || !contains(r.stderr, "Error: ", "descriptoin") {
		t.Errorf("edit with a misspelt field: exit %d, %s", r.code, r.stderr)
	}

	r = u.run("", "deployment", "edit", "dep1")
	if r.code != 1 || !contains(r.stderr, "no YAML on stdin") {
		t.Errorf("edit with empty stdin: exit %d, %s", r.code, r.stderr)
	}

	// A concurrent change: the CLI has read the deployment (it says so with --debug) and
	// waits for stdin; the deployment changes; the CLI's update must be refused.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBinary, "--debug", "deployment", "edit", "dep1")
	cmd.Env = u.env
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	lines := bufio.NewReader(stderr)
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("lxd-deploy edit ended before reading stdin: %v", err)
		}

		if strings.Contains(line, "reading YAML from stdin") {
			break
		}
	}

	must(t, admin.UpdateDeployment("dep1", api.DeploymentPut{Description: "changed meanwhile", Config: map[string]string{}}, ""))
	_, err = io.WriteString(stdin, "description: lost update\n")
	must(t, err)
	must(t, stdin.Close())
	rest, _ := io.ReadAll(lines)
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 || !contains(string(rest), "Error: ", "changed by someone else") {
		t.Errorf("concurrent edit: %v\n%s", err, rest)
	}

	deployment, _, err = admin.GetDeployment("dep1")
	must(t, err)
	if deployment.Description != "changed meanwhile" {
		t.Errorf("the concurrent change was overwritten: %q", deployment.Description)
	}
}

// testCLIErrors checks that mistakes exit 1 with a clear "Error: " line on stderr.
func testCLIErrors(t *testing.T, u *cliUser, trustedCert string) {
	u.fails([]string{`deployment "dep1" already exists`}, "deployment", "create", "dep1")
	u.fails([]string{`deployment name "1bad" must not start with a digit`}, "deployment", "create", "1bad")
	u.fails([]string{`shape name "we_b" has invalid character`}, "deployment", "shape", "create", "dep1", "we_b")
	u.fails([]string{`deployment "nope" not found`}, "deployment", "show", "nope")
	u.fails([]string{`deployment "nope" not found`}, "deployment", "shape", "list", "nope")
	u.fails([]string{`shape "nope" not found`}, "deployment", "shape", "show", "dep1", "nope")
	u.fails([]string{`shape "web" already exists`}, "deployment", "shape", "create", "dep1", "web")
	u.fails([]string{`deployment key "k1" already exists`}, "deployment", "key", "create", "dep1", "k1", strings.Repeat("a", 64))
	u.fails([]string{"certificate fingerprint", "not valid"}, "deployment", "key", "create", "dep1", "k2", "abc")
	u.fails([]string{`role "boss" is not valid`}, "deployment", "key", "create", "dep1", "k2", strings.Repeat("a", 64), "--role", "boss")
	u.fails([]string{"missing arguments", "usage: lxd-deploy deployment show"}, "deployment", "show")
	u.fails([]string{`remote "nope" does not exist`}, "deployment", "list", "nope:")
	u.fails([]string{`format "xml" is not known`}, "deployment", "list", "-f", "xml")
	u.fails([]string{`unknown command "frobnicate"`}, "deployment", "frobnicate")
	u.fails([]string{"not supported"}, "deployment", "shape", "create", "dep1", "db", "--from-image", "images:debian/12")
	u.fails([]string{"needs a client name", "--name"}, "config", "trust", "add")
	u.fails([]string{"already in the trust store"}, "config", "trust", "add", trustedCert)
	u.fails([]string{"read certificate", "no such file"}, "config", "trust", "add", filepath.Join(u.confDir, "missing.crt"))
}

// testCLIRenameDelete renames then deletes keys, shapes and the deployment.
func testCLIRenameDelete(t *testing.T, d *daemon, u *cliUser, govFingerprint string) {
	admin := d.Unix(t)
	u.ok("deployment", "rename", "dep1", "dep2")
	u.ok("deployment", "shape", "rename", "dep2", "web", "front")
	u.ok("deployment", "key", "rename", "dep2", "k1", "gov")
	_, _, err := admin.GetDeployment("dep1")
	expectCode(t, err, 404, "renamed deployment")
	_, _, err = admin.GetDeploymentShape("dep2", "front")
	must(t, err)
	_, _, err = admin.GetDeploymentKey("dep2", "gov")
	must(t, err)

	u.ok("deployment", "key", "delete", "dep2", "gov")
	_, _, err = admin.GetDeploymentKey("dep2", "gov")
	expectCode(t, err, 404, "deleted key")

	u.ok("deployment", "shape", "delete", "dep2", "front")
	_, _, err = admin.GetDeploymentShape("dep2", "front")
	expectCode(t, err, 404, "deleted shape")

	if out := u.ok("deployment", "delete", "dep2"); out != "Deployment dep2 deleted\n" {
		t.Errorf("delete printed %q", out)
	}

	_, _, err = admin.GetDeployment("dep2")
	expectCode(t, err, 404, "deleted deployment")
	if out := u.ok("deployment", "list", "-f", "json"); out != "[]\n" {
		t.Errorf("empty list json: %q", out)
	}

	u.ok("config", "trust", "remove", govFingerprint[:12])
	_, _, err = admin.GetCertificate(govFingerprint)
	expectCode(t, err, 404, "removed certificate")
	u.fails([]string{"not found"}, "deployment", "delete", "dep2")
}

// TestCLIBuildsWithoutCgo checks what doc/cli.md promises: lxd-deploy is a static
// binary that never links the daemon or the database.
func TestCLIBuildsWithoutCgo(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "../cli")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}

	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/lxd-deployd/lxd-deployd/db") || strings.HasPrefix(pkg, "github.com/lxd-deployd/lxd-deployd/lxd-deployd") || strings.Contains(pkg, "go-dqlite") {
			t.Errorf("lxd-deploy depends on %s", pkg)
		}
	}

	build := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "lxd-deploy"), "../cli")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err = build.CombinedOutput()
	if err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ../cli: %v\n%s", err, out)
	}
}
