package test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cliUser runs lxd-deploy as one user: its own configuration directory
// (LXD_DEPLOY_CONF), and LXD_DEPLOYD_DIR pointing at the test daemon so that the local
// remote is that daemon's unix socket.
type cliUser struct {
	t       *testing.T
	confDir string
	env     []string
}

func newCLIUser(t *testing.T, d *daemon) *cliUser {
	t.Helper()
	confDir := t.TempDir()
	env := append(os.Environ(), "LXD_DEPLOYD_DIR="+d.DataDir, "LXD_DEPLOY_CONF="+confDir, "EDITOR=false", "VISUAL=false")
	return &cliUser{t: t, confDir: confDir, env: env}
}

// cliResult is what one run of lxd-deploy did.
type cliResult struct {
	stdout string
	stderr string
	code   int
}

// run runs lxd-deploy with stdin and returns what it printed and its exit code.
func (u *cliUser) run(stdin string, args ...string) cliResult {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, cliBinary, args...)
	cmd.Env = u.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	result := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		result.code = exitErr.ExitCode()
	case err != nil:
		u.t.Fatalf("lxd-deploy %s: %v", strings.Join(args, " "), err)
	}

	return result
}

// ok runs lxd-deploy, expects success and returns its stdout.
func (u *cliUser) ok(args ...string) string {
	u.t.Helper()
	return u.okWithStdin("", args...)
}

func (u *cliUser) okWithStdin(stdin string, args ...string) string {
	u.t.Helper()
	r := u.run(stdin, args...)
	if r.code != 0 {
		u.t.Fatalf("lxd-deploy %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}

	return r.stdout
}

// fails runs lxd-deploy and expects exit code 1 with "Error: ..." on stderr containing
// every one of want, and nothing on stdout.
func (u *cliUser) fails(want []string, args ...string) {
	u.t.Helper()
	r := u.run("", args...)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error: ") || !contains(r.stderr, want...) || r.stdout != "" {
		u.t.Fatalf("lxd-deploy %s: want exit 1 and an error with %q\ngot exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), want, r.code, r.stdout, r.stderr)
	}
}
