package test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
)

// scrape reads /1.0/metrics over the unix socket.
func scrape(t testing.TB, c *client.Server) string {
	t.Helper()
	text, err := c.GetMetrics(context.Background())
	must(t, err)
	return text
}

// sample returns the value of the series whose line starts with series (name and labels as
// the exposition prints them, labels sorted), or -1 when it is absent.
func sample(text string, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, series+" ") {
			value, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
			if err == nil {
				return value
			}
		}
	}

	return -1
}

// waitForSample scrapes until the series reaches at least want.
func waitForSample(t testing.TB, c *client.Server, series string, want float64) string {
	t.Helper()
	var text string
	waitUntil(t, fmt.Sprintf("%s reaching %v", series, want), 20*time.Second, func() bool {
		text = scrape(t, c)
		return sample(text, series) >= want
	}, every(100*time.Millisecond), showing(func() string { return "scrape:\n" + text }))
	return text
}

// promtoolCheck runs "promtool check metrics" on an exposition, as CI installs promtool.
func promtoolCheck(t testing.TB, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is missing: install the Debian package prometheus (make deps-test does)")
	}

	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
