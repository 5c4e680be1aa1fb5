package test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
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

// waitForSample scrapes until the series reaches at least want.
func waitForSample(t testing.TB, c *client.Server, series string, want float64) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		text := scrape(t, c)
		if sample(text, series) >= want {
			return text
		}

		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %v; scrape:\n%s", series, want, text)
		}

		time.Sleep(100 * time.Millisecond)
	}
}

// TestMetricsEndToEnd scrapes a live daemon on a private LXD: the exposition passes
// promtool, and its values follow a launch, a launch refused at the maximum and a failing
// webhook.
func TestMetricsEndToEnd(t *testing.T) {
	env := newGovernorEnv(t, 0, 1)

	// A governor webhook that always fails.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	d.GovernorWebhookURL = failing.URL + "/hook"
	d.Config = map[string]string{"webhook.retry_initial_delay": "100ms", "webhook.retry_max_delay": "200ms", "webhook.retry_max_attempts": "2", "webhook.metrics_interval": "0"}
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))

	shape := `deployment="dep1",project="default",shape="web"`
	before := scrape(t, env.admin)
	promtoolCheck(t, before)
	if sample(before, "lxd_deployd_shape_instances{"+shape+"}") != 0 || sample(before, "lxd_deployd_shape_instances_maximum{"+shape+"}") != 1 {
		t.Fatalf("shape gauges before any launch:\n%s", before)
	}

	if sample(before, "lxd_deployd_lxd_reachable") != 1 || sample(before, "lxd_deployd_dqlite_leader") != 1 {
		t.Fatalf("lxd_reachable or dqlite_leader is not 1:\n%s", before)
	}

	env.launch(t, env.gov, env.name("m1"))
	_, err = env.gov.CreateDeploymentShapeInstance("dep1", "web", env.name("m2"))
	expectCode(t, err, http.StatusConflict, "launch past the maximum")

	after := waitForSample(t, env.admin, `lxd_deployd_webhook_delivery_attempts_total{deployment="dep1",project="default",result="error"}`, 1)
	promtoolCheck(t, after)
	checks := map[string]float64{
		"lxd_deployd_shape_instances{" + shape + "}":                                                                  1,
		`lxd_deployd_instance_launches_total{deployment="dep1",project="default",result="ok",shape="web"}`:            1,
		`lxd_deployd_instance_launches_total{deployment="dep1",project="default",result="refused_bound",shape="web"}`: 1,
		"lxd_deployd_instance_launch_duration_seconds_count{" + shape + "}":                                           1,
		`lxd_deployd_lxd_calls_total{kind="create",result="ok"}`:                                                      1,
	}
	for series, want := range checks {
		if got := sample(after, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	if sample(after, `lxd_deployd_api_requests_total{code="409",method="POST",route="/1.0/deployments/{deployment}/shapes/{shape}/instances/{instance}"}`) != 1 {
		t.Errorf("the refused launch is not counted by route template and code")
	}

	if strings.Contains(after, env.name("m1")) {
		t.Errorf("an instance name leaked into the labels")
	}

	// The delivery ends up failed after its attempts.
	after = waitForSample(t, env.admin, `lxd_deployd_webhook_deliveries{deployment="dep1",project="default",status="failed"}`, 1)
	promtoolCheck(t, after)
}

// TestMetricsCertificate: a metrics certificate reads /1.0/metrics (OpenMetrics when asked)
// and gets 403 everywhere else; an untrusted client gets 403 on /1.0/metrics.
func TestMetricsCertificate(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	admin := d.Unix(t)
	prom := newIdentity(t)
	trustIdentity(t, admin, prom, "prometheus", "metrics")
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))

	c := d.HTTPS(t, prom)
	text, err := c.GetMetrics(context.Background())
	must(t, err)
	if !strings.Contains(text, "lxd_deployd_api_requests_total") {
		t.Fatalf("metrics certificate scrape:\n%s", text)
	}

	// As Prometheus asks: OpenMetrics.
	pair, err := tls.X509KeyPair([]byte(prom.CertPEM), []byte(prom.KeyPEM))
	must(t, err)
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest("GET", "https://"+d.HTTPSAddress+"/1.0/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := httpClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") || !strings.HasSuffix(string(body), "# EOF\n") {
		t.Fatalf("OpenMetrics not served: %s\n%s", resp.Header.Get("Content-Type"), body)
	}

	_, _, err = c.GetDeployment("dep1")
	expectCode(t, err, http.StatusForbidden, "metrics certificate reading a deployment")
	_, err = c.GetDeploymentNames()
	expectCode(t, err, http.StatusForbidden, "metrics certificate listing deployments")
	_, err = c.GetOperations()
	expectCode(t, err, http.StatusForbidden, "metrics certificate listing operations")
	err = c.GetEvents(context.Background(), client.EventsArgs{}, func(lxdapi.Event) {})
	expectCode(t, err, http.StatusForbidden, "metrics certificate on the event stream")
	_, err = c.GetCertificates()
	expectCode(t, err, http.StatusForbidden, "metrics certificate reading the trust store")

	_, err = d.HTTPS(t, nil).GetMetrics(context.Background())
	expectCode(t, err, http.StatusForbidden, "untrusted scrape")
	stranger := newIdentity(t)
	_, err = d.HTTPS(t, stranger).GetMetrics(context.Background())
	expectCode(t, err, http.StatusForbidden, "untrusted certificate scrape")
}
