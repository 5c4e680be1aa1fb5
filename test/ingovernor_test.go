package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

var ingovernorBuild staticBuild

// buildIngovernor builds the in-container test governor as a static binary, once.
func buildIngovernor(t testing.TB) string {
	return ingovernorBuild.binary(t, "ingovernor", "./ingovernor")
}

// TestInInstanceGovernor runs a static governor inside a container of shape gov: it reaches
// the daemon through /dev/lxd-deployd.sock with nothing but its key pair, and scales shape
// web of its own deployment.
func TestInInstanceGovernor(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	binary := buildIngovernor(t)

	id, governorInstance := env.launchGovernorInstance(t, "dep1", "ingov", "ingov", "admin")
	hostSocket := filepath.Join(env.d.DataDir, "governor", governorInstance+".sock")
	_, err := os.Stat(hostSocket)
	must(t, err)

	content, err := os.ReadFile(binary)
	must(t, err)
	env.pushFile(t, governorInstance, "/ingov", content, 0o755)
	env.pushFile(t, governorInstance, "/gov.crt", []byte(id.CertPEM), 0o600)
	env.pushFile(t, governorInstance, "/gov.key", []byte(id.KeyPEM), 0o600)

	run := func(args ...string) (int, string, string) {
		return env.exec(t, governorInstance, append([]string{"/ingov"}, args...)...)
	}

	web1, web2, web3 := env.name("w1"), env.name("w2"), env.name("w3")
	for _, name := range []string{web1, web2} {
		code, _, stderr := run("-deployment", "dep1", "launch", "web", name)
		if code != 0 {
			t.Fatalf("in-instance launch of %s: exit %d: %s\n%s", name, code, stderr, env.d.Log())
		}
	}

	code, _, stderr := run("-deployment", "dep1", "launch", "web", web3)
	if code == 0 || !strings.Contains(stderr, "scaling maximum") {
		t.Fatalf("the bounds hold for in-instance governors too: exit %d: %s", code, stderr)
	}

	code, stdout, stderr := run("-deployment", "dep1", "list", "web")
	var listed []api.DeploymentInstance
	if code != 0 || json.Unmarshal([]byte(stdout), &listed) != nil || len(listed) != 2 {
		t.Fatalf("in-instance list: exit %d: %s %s", code, stdout, stderr)
	}

	code, _, stderr = run("-deployment", "dep1", "delete", "web", web2)
	if code != 0 {
		t.Fatalf("in-instance delete: exit %d: %s", code, stderr)
	}

	if live := env.lxdInstances(t); len(live) != 2 { // the governor and web1
		t.Fatalf("LXD after in-instance scaling: %v", live)
	}

	// The same governor with a token for another deployment is refused, even holding a key
	// there: it does not run inside that deployment.
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}}))
	must(t, env.admin.CreateDeploymentShape("dep2", webShape("web", 0, 2)))
	must(t, env.admin.CreateDeploymentKey("dep2", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "ingov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	code, _, stderr = run("-deployment", "dep2", "list", "web")
	if code == 0 || !strings.Contains(stderr, "not a member of deployment") {
		t.Fatalf("a token for another deployment must be refused: exit %d: %s", code, stderr)
	}

	// The management API is not reachable through the socket; GET /1.0 is.
	for _, path := range []string{"/1.0/deployments", "/1.0/certificates", "/1.0/deployments/dep1/keys"} {
		code, _, stderr = run("-deployment", "dep1", "get", path)
		if code == 0 || !strings.Contains(stderr, "no such API endpoint") {
			t.Fatalf("management route %s through the governor socket: exit %d: %s", path, code, stderr)
		}
	}

	code, stdout, stderr = run("-deployment", "dep1", "get", "/1.0")
	if code != 0 || !strings.Contains(stdout, `"auth":"trusted"`) {
		t.Fatalf("GET /1.0 through the governor socket: exit %d: %s %s", code, stdout, stderr)
	}

	// A token from the CLI works once on the governor transport; the handler is the same
	// whatever carries the connection, so the host end of the socket serves for the test.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "gov.crt"), filepath.Join(dir, "gov.key")
	must(t, os.WriteFile(certFile, []byte(id.CertPEM), 0o600))
	must(t, os.WriteFile(keyFile, []byte(id.KeyPEM), 0o600))
	token := strings.TrimSpace(newCLIUser(t, env.d).ok("deployment", "key", "token", "dep1", "ingov", "--cert", certFile, "--key", keyFile))
	viaSocket, err := client.ConnectUnix(hostSocket, &client.ConnectionArgs{TokenSource: func() (string, error) { return token, nil }})
	must(t, err)
	_, err = viaSocket.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	_, err = viaSocket.GetDeploymentShapeInstanceNames("dep1", "web")
	expectCode(t, err, 401, "replayed CLI token")
	other := newIdentity(t)
	must(t, os.WriteFile(certFile, []byte(other.CertPEM), 0o600))
	must(t, os.WriteFile(keyFile, []byte(other.KeyPEM), 0o600))
	newCLIUser(t, env.d).fails([]string{"not the certificate of key"}, "deployment", "key", "token", "dep1", "ingov", "--cert", certFile, "--key", keyFile)

	// Deleting the key cuts the governor off at its next request.
	must(t, env.admin.DeleteDeploymentKey("dep1", "ingov"))
	code, _, stderr = run("-deployment", "dep1", "list", "web")
	if code == 0 || !strings.Contains(stderr, "no key on deployment") {
		t.Fatalf("a deleted key must cut the governor off: exit %d: %s", code, stderr)
	}

	// The socket goes with its instance.
	env.remove(t, env.admin, web1)
	op, err := env.admin.DeleteDeploymentShapeInstance("dep1", "gov", governorInstance)
	must(t, err)
	must(t, op.Wait(t.Context()))
	_, err = os.Stat(hostSocket)
	if !os.IsNotExist(err) {
		t.Fatalf("the governor socket must be removed with its instance: %v", err)
	}
}
