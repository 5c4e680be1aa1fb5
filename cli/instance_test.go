package main

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

func TestInstanceRows(t *testing.T) {
	created := time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC)
	rows := instanceRows([]api.DeploymentInstance{
		{Name: "web2", Status: "Stopped", State: rules.Created, CreatedAt: created, TemplateHash: "3f2a9c1b7d4e5f60718293a4"},
		{Name: "web1", Status: "Running", State: rules.Created, CreatedAt: created, TemplateHash: "abc", Limits: map[string]string{"limits.memory": "256MiB", "limits.cpu": "2", "limits.processes": "100"}, Location: "m2"},
		{Name: "web3", Status: "Creating", State: rules.Creating},
	})

	want := [][]string{
		{"web1", "Running", "created", createdAt(created), "abc", "cpu=2 memory=256MiB", "m2"},
		{"web2", "Stopped", "created", createdAt(created), "3f2a9c1b7d4e", "", ""},
		{"web3", "Creating", "creating", "", "", "", ""},
	}

	if len(rows) != len(want) {
		t.Fatalf("rows: %q", rows)
	}

	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}

	if got := createdAt(created); got != created.Local().Format("2006/01/02 15:04 MST") {
		t.Errorf("createdAt: %q", got)
	}
}

func TestInstanceActionStatePut(t *testing.T) {
	byName := map[string]instanceAction{}
	for _, action := range instanceActions {
		byName[action.name] = action
	}

	stop := byName["stop"].statePut(true, 30)
	if stop.Action != "stop" || !stop.Force || stop.Timeout != 30 {
		t.Errorf("stop: %+v", stop)
	}

	// Actions without a clean shutdown ignore the flags they do not have.
	start := byName["start"].statePut(true, 30)
	if start.Action != "start" || start.Force || start.Timeout != -1 {
		t.Errorf("start: %+v", start)
	}

	for _, name := range []string{"start", "stop", "restart", "freeze", "unfreeze"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %s command", name)
		}
	}
}

func TestProgressPlain(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, false)
	p.begin("Launching web1")
	p.end("Instance web1 launched", nil)
	if out.String() != "Launching web1\nInstance web1 launched\n" {
		t.Errorf("success: %q", out.String())
	}

	out.Reset()
	p = newProgress(&out, false)
	p.begin("Deleting web1")
	p.end("Instance web1 deleted", errors.New("boom"))
	if out.String() != "Deleting web1\n" {
		t.Errorf("failure: %q", out.String())
	}
}

// lockedBuffer is a bytes.Buffer the spinner goroutine and the test may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProgressTerminal(t *testing.T) {
	var out lockedBuffer
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}

	p := newProgress(&out, true)
	p.interval = time.Millisecond
	p.now = clock
	p.begin("Launching web1")
	for strings.Count(out.String(), "\r") < 3 {
		time.Sleep(time.Millisecond)
	}

	mu.Lock()
	now = now.Add(2500 * time.Millisecond)
	mu.Unlock()
	p.end("Instance web1 launched", nil)

	got := out.String()
	if !strings.HasPrefix(got, "\r\033[K| Launching web1 (0.0s)\r\033[K/ Launching web1") {
		t.Errorf("spinner: %q", got)
	}

	if !strings.HasSuffix(got, "\r\033[KInstance web1 launched (2.5s)\n") {
		t.Errorf("final line: %q", got)
	}

	// A failure leaves a clean line for the error.
	var failed lockedBuffer
	p = newProgress(&failed, true)
	p.begin("Stopping web1")
	p.end("Instance web1 stopped", errors.New("boom"))
	if got := failed.String(); !strings.HasSuffix(got, "\r\033[K") || strings.Contains(got, "stopped") {
		t.Errorf("failure: %q", got)
	}
}

func TestSpinnerLineAndElapsed(t *testing.T) {
	if got := spinnerLine(5, "Starting web1", 1200*time.Millisecond); got != "/ Starting web1 (1.2s)" {
		t.Errorf("spinnerLine: %q", got)
	}

	for d, want := range map[time.Duration]string{
		-time.Second:                          "0.0s",
		0:                                     "0.0s",
		9940 * time.Millisecond:               "9.9s",
		12*time.Second + 700*time.Millisecond: "12s",
		90 * time.Second:                      "1m30s",
	} {
		if got := formatElapsed(d); got != want {
			t.Errorf("formatElapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestInstanceCommandTree(t *testing.T) {
	a := &app{}
	root := a.command()
	cmd, _, err := root.Find([]string{"deployment", "shape", "instance"})
	if err != nil || cmd.Name() != "instance" {
		t.Fatalf("deployment shape instance: %v", err)
	}

	for _, name := range []string{"launch", "delete", "list", "show", "start", "stop", "restart", "freeze", "unfreeze"} {
		sub, _, err := cmd.Find([]string{name})
		if err != nil || sub.Name() != name {
			t.Errorf("instance %s: %v", name, err)
			continue
		}

		withTimeout := name == "stop" || name == "restart"
		if (sub.Flags().Lookup("force") != nil) != withTimeout || (sub.Flags().Lookup("timeout") != nil) != withTimeout {
			t.Errorf("instance %s: --force/--timeout present must be %v", name, withTimeout)
		}
	}
}

func TestInstanceNamesCheckedBeforeConnecting(t *testing.T) {
	for _, args := range [][]string{
		{"launch", "dep1", "web", "1bad"},
		{"delete", "dep1", "web", "bad_name"},
		{"stop", "dep1", "web_", "web1"},
	} {
		var stdout, stderr bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
		t.Setenv("LXD_DEPLOY_CONF", t.TempDir())
		root := a.command()
		root.SetArgs(append([]string{"deployment", "shape", "instance"}, args...))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "name") || stdout.Len() != 0 || stderr.Len() != 0 {
			t.Errorf("%v: err %v, stdout %q, stderr %q", args, err, stdout.String(), stderr.String())
		}
	}

	var stdout bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stdout}
	root := a.command()
	root.SetArgs([]string{"deployment", "shape", "instance", "launch", "dep1", "web"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "usage: lxd-deploy deployment shape instance launch") {
		t.Errorf("missing argument: %v", err)
	}
}

func TestImageSource(t *testing.T) {
	if got := imageSource("busybox"); got.Alias != "busybox" || got.Fingerprint != "" {
		t.Errorf("alias: %+v", got)
	}

	if got := imageSource("1A2B3C4D5E6F7a8b"); got.Fingerprint != "1a2b3c4d5e6f7a8b" || got.Alias != "" {
		t.Errorf("fingerprint: %+v", got)
	}

	if got := imageSource("cafe"); got.Alias != "cafe" {
		t.Errorf("short hex is an alias: %+v", got)
	}
}
