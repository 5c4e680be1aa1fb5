package test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestReferenceGovernorIdleToZero (issue 36): the reference governor (lxd-deploy governor
// run, idle_to_zero 4s) wakes a shape at zero on the front door's scale request, so the
// first request is served; with no more requests it takes the shape back to zero once the
// door's figures in the metrics events show it idle; and the next request wakes it again.
func TestReferenceGovernorIdleToZero(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	z := newZeroEnvGoverned(t, 100, "45s", false)
	z.runReferenceGovernor(t, "shapes:\n  web:\n    idle_to_zero: 4s\n")
	for round := 1; round <= 2; round++ {
		a := ask()
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("round %d: the first request at zero: %v", round, a)
		}

		t.Logf("measured: round %d: the first request at zero served after %v (the reference governor woke the shape)", round, a.took.Round(time.Millisecond))
		start := time.Now()
		z.waitUntil(t, "the governor taking the idle shape to zero", 2*time.Minute, func() bool { return z.size() == 0 })
		t.Logf("measured: round %d: back at zero %v after the last request (idle_to_zero 4s, metrics every 1s)", round, time.Since(start).Round(100*time.Millisecond))
		// The door's servers go at the doorkeeper's next round.
		time.Sleep(2 * time.Second)
	}
}

// runReferenceGovernor runs lxd-deploy governor run for dep1 with this policy file, as an
// admin deployment key over HTTPS, receiving the deployment's webhooks (metrics every
// second) until the test ends; its log is shown when the test fails.
func (z *zeroEnv) runReferenceGovernor(t *testing.T, policy string) {
	t.Helper()
	dir := t.TempDir()
	id := newIdentity(t)
	trustIdentity(t, z.admin, id, "autoscaler", "deployments")
	must(t, z.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "autoscaler"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	files := map[string]string{"gov.crt": id.CertPEM, "gov.key": id.KeyPEM, "server.crt": z.d.ServerCert, "policy.yaml": policy}
	for name, content := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}

	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d, etag, err := z.admin.GetDeployment("dep1")
	must(t, err)
	d.GovernorWebhookURL = "http://" + listen + "/hook"
	d.Config = map[string]string{"webhook.metrics_interval": "1s", "webhook.retry_initial_delay": "200ms"}
	must(t, z.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	secret, err := z.admin.GetWebhookSecret("dep1", false)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(secret), 0o600))
	log := filepath.Join(dir, "governor.log")
	logFile, err := os.Create(log)
	must(t, err)
	governor := exec.Command(cliBinary, "governor", "run", "--listen", listen, "--deployment", "dep1",
		"--secret-file", filepath.Join(dir, "secret"), "--remote", "https://"+z.d.HTTPSAddress,
		"--cert", filepath.Join(dir, "gov.crt"), "--key", filepath.Join(dir, "gov.key"), "--server-cert", filepath.Join(dir, "server.crt"),
		"--policy", filepath.Join(dir, "policy.yaml"))
	governor.Env = append(os.Environ(), "LXD_DEPLOY_CONF="+dir)
	governor.Stdout, governor.Stderr = logFile, logFile
	governor.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, governor.Start())
	t.Cleanup(func() {
		_ = governor.Process.Signal(syscall.SIGTERM)
		_ = governor.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(log)
			t.Logf("governor log:\n%s", data)
		}
	})
	z.governorLog = log
}

// size is the shape's scaling_current (-1 when it cannot be read).
func (z *zeroEnv) size() int {
	s, _, err := z.admin.GetDeploymentShape("dep1", "web")
	if err != nil {
		return -1
	}

	return s.ScalingCurrent
}
