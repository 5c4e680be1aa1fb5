package test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// monitorProcess is a running "lxd-deploy monitor" whose output lines are collected.
type monitorProcess struct {
	mu    sync.Mutex
	lines []string
}

func startMonitor(t *testing.T, u *cliUser, args ...string) *monitorProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, cliBinary, append([]string{"monitor"}, args...)...)
	cmd.Env = u.env
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	m := &monitorProcess{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, scanner.Text())
			m.mu.Unlock()
		}
	}()

	t.Cleanup(func() {
		cancel()
		<-done
		_ = cmd.Wait()
	})
	return m
}

// waitFor returns the first line containing every one of parts.
func (m *monitorProcess) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	var found string
	waitUntil(t, fmt.Sprintf("the monitor printing a line with %q", parts), 30*time.Second, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, line := range m.lines {
			if contains(line, parts...) {
				found = line
				return true
			}
		}

		return false
	}, every(50*time.Millisecond), showing(func() string {
		m.mu.Lock()
		defer m.mu.Unlock()
		return "it printed:\n" + strings.Join(m.lines, "\n")
	}))
	return found
}

// TestMonitorShowsLaunch follows a launch with "lxd-deploy monitor": its lifecycle event
// and operation, filtered to the deployment, and the daemon's log lines (with the request's
// id) as logging events.
func TestMonitorShowsLaunch(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	u := newCLIUser(t, env.d)
	events := startMonitor(t, u, "--pretty", "--deployment", "dep1")
	logs := startMonitor(t, u, "--pretty", "--type", "logging")
	yamlEvents := startMonitor(t, u, "--type", "lifecycle")

	// Wait until all three streams are connected: the deployment's own change shows in them.
	printed := func(m *monitorProcess) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.lines) > 0
	}

	waitUntil(t, "the monitors connected", 10*time.Second, func() bool {
		if printed(events) && printed(logs) && printed(yamlEvents) {
			return true
		}

		d, etag, err := env.admin.GetDeployment("dep1")
		must(t, err)
		d.Description = "watched " + time.Now().String()
		must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
		return false
	})

	name := env.name("mon1")
	env.launch(t, env.gov, name)
	events.waitFor(t, "lifecycle deployment-instance-created", "/1.0/deployments/dep1/shapes/web/instances/"+name, "(by gov-cert over tls)")
	events.waitFor(t, "operation", "Success", "Creating instance "+name)
	logs.waitFor(t, "logging info lifecycle", "action=\"deployment-instance-created\"")
	yamlEvents.waitFor(t, "action: deployment-instance-created")

	// A request's log lines carry its id and caller; an operation's carry its id too.
	logs.waitFor(t, "operation=", "request_id=", `caller="deployments:gov-cert`)

	// The daemon's log is for admins only.
	err := env.gov.GetEvents(context.Background(), client.EventsArgs{Types: []string{"logging"}}, func(lxdapi.Event) {})
	expectCode(t, err, http.StatusForbidden, "a governor asking for logging events")

	// Events of other deployments are filtered out.
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "other"}}))
	yamlEvents.waitFor(t, "/1.0/deployments/other")
	events.mu.Lock()
	defer events.mu.Unlock()
	for _, line := range events.lines {
		if strings.Contains(line, "/1.0/deployments/other") {
			t.Fatalf("--deployment dep1 let through: %s", line)
		}
	}
}

// TestMonitorErrors: bad flags are refused before connecting.
func TestMonitorErrors(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	u := newCLIUser(t, d)
	u.fails([]string{`event type "bogus" is not valid`}, "monitor", "--type", "bogus")
	u.fails([]string{"deployment name"}, "monitor", "--deployment", "-bad")
}
