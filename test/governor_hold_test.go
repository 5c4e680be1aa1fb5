package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// referenceGovernor is one "lxd-deploy governor run" process of a test.
type referenceGovernor struct {
	cmd    *exec.Cmd
	log    string
	listen string // where it takes the deployment's webhooks
	done   chan error
}

// startReferenceGovernor runs "lxd-deploy governor run" for dep1 over HTTPS with id's key
// pair, with extra flags; it is stopped (SIGTERM) when the test ends.
func startReferenceGovernor(t *testing.T, env *governorEnv, id *identity, extra ...string) *referenceGovernor {
	t.Helper()
	dir := t.TempDir()
	secret, err := env.admin.GetWebhookSecret("dep1", false)
	must(t, err)
	for name, content := range map[string]string{"gov.crt": id.CertPEM, "gov.key": id.KeyPEM, "server.crt": env.d.ServerCert, "secret": secret} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}

	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{"governor", "run", "--listen", listen, "--deployment", "dep1",
		"--secret-file", filepath.Join(dir, "secret"), "--remote", "https://" + env.d.HTTPSAddress,
		"--cert", filepath.Join(dir, "gov.crt"), "--key", filepath.Join(dir, "gov.key"), "--server-cert", filepath.Join(dir, "server.crt")}, extra...)
	g := &referenceGovernor{cmd: exec.Command(cliBinary, args...), log: filepath.Join(dir, "governor.log"), listen: listen, done: make(chan error, 1)}
	logFile, err := os.Create(g.log)
	must(t, err)
	g.cmd.Env = append(os.Environ(), "LXD_DEPLOY_CONF="+dir)
	g.cmd.Stdout, g.cmd.Stderr = logFile, logFile
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, g.cmd.Start())
	go func() { g.done <- g.cmd.Wait(); _ = logFile.Close() }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
		}

		if t.Failed() {
			t.Logf("governor %v log:\n%s", extra, g.output())
		}
	})

	return g
}

// startPolicyGovernor runs the reference governor for dep1 with policy (a policy file's
// YAML) as an admin deployment key "autoscaler" over HTTPS, with extra flags.
func startPolicyGovernor(t *testing.T, env *governorEnv, policy string, extra ...string) *referenceGovernor {
	t.Helper()
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, "autoscaler", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "autoscaler"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	path := filepath.Join(t.TempDir(), "policy.yaml")
	must(t, os.WriteFile(path, []byte(policy), 0o600))
	return startReferenceGovernor(t, env, id, append([]string{"--policy", path}, extra...)...)
}

// startWebhookGovernor is startPolicyGovernor receiving dep1's webhooks, metrics events
// every metricsInterval ("0": none).
func startWebhookGovernor(t *testing.T, env *governorEnv, policy string, metricsInterval string) *referenceGovernor {
	t.Helper()
	g := startPolicyGovernor(t, env, policy)
	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	d.GovernorWebhookURL = "http://" + g.listen + "/hook"
	d.Config = map[string]string{"webhook.metrics_interval": metricsInterval, "webhook.retry_initial_delay": "200ms"}
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	return g
}

// output is what the governor logged so far.
func (g *referenceGovernor) output() string {
	data, _ := os.ReadFile(g.log)
	return string(data)
}

// exited waits up to timeout for the governor to end and returns its exit code (-1: it
// still runs).
func (g *referenceGovernor) exited(timeout time.Duration) int {
	select {
	case <-g.done:
		g.done <- nil // for the cleanup
		return g.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		return -1
	}
}

// TestOneActiveGovernor: one active governor per deployment (seed 004's review), end to end
// with "lxd-deploy governor run" processes and a private LXD. The first registers; a
// second is refused with a message naming the first, and its key (an admin key) may not
// change instances meanwhile, nor may any other key, while the holder and admins may, in
// LXD; read-only keys still cannot register. A second one with --takeover takes the
// deployment over and the first one stops; stopping the holder releases the deployment.
// The API and "lxd-deploy deployment governor show" say who holds it and since when.
func TestOneActiveGovernor(t *testing.T) {
	env := newGovernorEnv(t, 0, 5)
	u := newCLIUser(t, env.d)
	ids := map[string]*identity{}
	servers := map[string]*client.Server{}
	for _, key := range []string{"gova", "govb"} {
		ids[key] = newIdentity(t)
		trustIdentity(t, env.admin, ids[key], key, "deployments")
		must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: key}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: ids[key].Fingerprint}))
		servers[key] = env.d.HTTPS(t, ids[key])
	}

	holder := func() api.DeploymentGovernor {
		t.Helper()
		g, err := env.readOnly.GetDeploymentGovernor("dep1")
		must(t, err)
		return *g
	}

	launch := func(c *client.Server, name string) error {
		op, err := c.CreateDeploymentShapeInstance("dep1", "web", name)
		if err != nil {
			return err
		}

		return op.Wait(context.Background())
	}

	inLXD := func(name string) bool {
		_, _, err := env.lxdConn.GetInstance(name)
		return err == nil
	}

	// Nobody holds dep1: every admin key acts, as before.
	if h := holder(); h.Name != "" {
		t.Fatalf("a fresh deployment is held: %+v", h)
	}

	must(t, launch(env.gov, env.name("free")))

	// gov-a registers.
	a := startReferenceGovernor(t, env, ids["gova"], "--name", "gov-a", "--hold-ttl", "6s")
	waitUntil(t, "gov-a holds dep1", 30*time.Second, func() bool { return holder().Name == "gov-a" })
	first := holder()
	if first.Key != "gova" || first.CertificateFingerprint != ids["gova"].Fingerprint || first.Since.IsZero() || time.Since(first.Since) > time.Minute {
		t.Errorf("gov-a's hold: %+v", first)
	}

	shown := u.ok("deployment", "governor", "show", "dep1")
	if !contains(shown, "name: gov-a", "key: gova", "since: ") {
		t.Errorf("deployment governor show:\n%s", shown)
	}

	// A second governor is refused, naming the first.
	b := startReferenceGovernor(t, env, ids["govb"], "--name", "gov-b", "--hold-ttl", "6s")
	if code := b.exited(30 * time.Second); code != 1 || !contains(b.output(), `governed by governor "gov-a" (key "gova") since`, "--takeover") {
		t.Fatalf("second governor: exit %d\n%s", code, b.output())
	}

	// Meanwhile only gov-a's key (and admins) change dep1's instances.
	for name, c := range map[string]*client.Server{"govb": servers["govb"], "gov": env.gov} {
		err := launch(c, env.name("refused-"+name))
		expectCode(t, err, 409, name+"'s launch while gov-a holds dep1")
		if err == nil || !contains(err.Error(), `governor "gov-a"`, "only the active governor") {
			t.Errorf("%s's launch: %v", name, err)
		}

		if inLXD(env.name("refused-" + name)) {
			t.Errorf("%s's refused launch reached LXD", name)
		}
	}

	op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", env.name("free"))
	expectCode(t, err, 409, "another key's delete while gov-a holds dep1")
	if op != nil || !inLXD(env.name("free")) {
		t.Errorf("a refused delete touched LXD")
	}

	_, err = env.readOnly.HoldDeploymentGovernor("dep1", api.DeploymentGovernorPut{Name: "watcher"})
	expectCode(t, err, 403, "a read-only key's registration")
	must(t, launch(servers["gova"], env.name("by-a")))
	must(t, launch(env.admin, env.name("by-admin")))
	if !inLXD(env.name("by-a")) || !inLXD(env.name("by-admin")) {
		t.Errorf("the holder's and the admin's launches are not in LXD")
	}

	if h := holder(); h.Name != "gov-a" || !h.Since.Equal(first.Since) {
		t.Errorf("renewals moved since: %+v, was %+v", h, first)
	}

	// gov-b takes over explicitly; gov-a finds out at its next renewal and stops.
	startReferenceGovernor(t, env, ids["govb"], "--name", "gov-b", "--hold-ttl", "6s", "--takeover")
	waitUntil(t, "gov-b holds dep1", 30*time.Second, func() bool { return holder().Name == "gov-b" })
	if code := a.exited(30 * time.Second); code != 1 || !contains(a.output(), "lost deployment dep1 to another governor") {
		t.Fatalf("gov-a after the takeover: exit %d\n%s", code, a.output())
	}

	err = launch(servers["gova"], env.name("late-a"))
	expectCode(t, err, 409, "gov-a's launch after the takeover")
	must(t, launch(servers["govb"], env.name("by-b")))

	// An admin releases the deployment; gov-b's next renewal takes it again (it has not
	// been taken by another), so the API shows it held by gov-b with a new since.
	released := holder().Since
	out := u.ok("deployment", "governor", "release", "dep1")
	if !strings.Contains(out, "released") {
		t.Errorf("governor release printed %q", out)
	}

	waitUntil(t, "gov-b holds dep1 again", 30*time.Second, func() bool { h := holder(); return h.Name == "gov-b" && h.Since.After(released) })
}
