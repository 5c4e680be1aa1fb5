package test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestMetricsEndToEnd scrapes a live daemon on a private LXD: the exposition passes
// promtool, and its values follow a launch, a launch refused at the maximum and a failing
// webhook.
func TestMetricsEndToEnd(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestMetricsShapeLifecycle follows a shape with a health check, a launch hook and a
// rollout on a private LXD through its gauges and counters: an instance waiting in
// launching:wait, then ready and healthy after continue; outdated after a template change;
// a running rollout with its progress; and, once it completes, no outdated instance and a
// complete rollout counted.
func TestMetricsShapeLifecycle(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 2)
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "1s", Grace: "1s"}
		put.Hooks = &api.DeploymentShapeHooks{LaunchTimeout: "60s"}
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0"}
	})

	shape := `deployment="dep1",project="default",shape="web"`
	series := func(name string) string { return name + "{" + shape + "}" }

	waitingSeries := `lxd_deployd_shape_instances_hook_waiting{deployment="dep1",hook="launching:wait",project="default",shape="web"}`
	healthy := `lxd_deployd_shape_instances_health{deployment="dep1",health="healthy",project="default",shape="web"}`
	running := `lxd_deployd_shape_rollouts{deployment="dep1",project="default",shape="web",status="running"}`
	continued := `lxd_deployd_lifecycle_hook_waits_ended_total{action="continue",by="request",deployment="dep1",hook="launching:wait",project="default",shape="web"}`
	completed := `lxd_deployd_rollouts_finished_total{deployment="dep1",project="default",shape="web",status="complete"}`

	text := scrape(t, env.admin)
	revision := sample(text, series("lxd_deployd_shape_revision"))
	if revision < 1 || sample(text, healthy) != 0 || sample(text, waitingSeries) != 0 || sample(text, running) != -1 {
		t.Fatalf("gauges of a shape with checks and hooks but no instance:\n%s", text)
	}

	// A new instance waits in its launch hook: counted, not ready.
	a := env.name("a")
	env.launch(t, env.gov, a)
	text = waitForSample(t, env.admin, waitingSeries, 1)
	if sample(text, series("lxd_deployd_shape_instances")) != 1 || sample(text, series("lxd_deployd_shape_instances_ready")) != 0 {
		t.Fatalf("an instance in launching:wait counts and is not ready:\n%s", text)
	}

	// Continue: out of the hook, healthy, ready.
	must(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", a, "continue"))
	waitForSample(t, env.admin, healthy, 1)
	text = waitForSample(t, env.admin, series("lxd_deployd_shape_instances_ready"), 1)
	if sample(text, waitingSeries) != 0 || sample(text, continued) != 1 || sample(text, series("lxd_deployd_shape_degraded")) != 0 {
		t.Fatalf("after continue: no wait, one counted, not degraded:\n%s", text)
	}

	// A template change makes a new revision; the instance is outdated until a rollout.
	env.updateShape(t, "v2", setVersion("2"))
	text = scrape(t, env.admin)
	if sample(text, series("lxd_deployd_shape_revision")) != revision+1 || sample(text, series("lxd_deployd_shape_instances_outdated")) != 1 {
		t.Fatalf("after a template change: revision %v+1, one outdated:\n%s", revision, text)
	}

	// The rollout's new instance waits in the launch hook, holding the rollout running.
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	text = waitForSample(t, env.admin, waitingSeries, 1)
	if sample(text, running) != 1 || sample(text, series("lxd_deployd_shape_rollout_progress_ratio")) != 0.5 {
		t.Fatalf("a running rollout with its surge instance made (progress 1 of 2):\n%s", text)
	}

	for name, instance := range env.instancesByName(t) {
		if instance.Lifecycle == api.LifecycleLaunchingWait {
			must(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", name, "continue"))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, op.Wait(ctx))
	text = waitForSample(t, env.admin, completed, 1)
	promtoolCheck(t, text)
	checks := map[string]float64{
		series("lxd_deployd_shape_instances"):          1,
		series("lxd_deployd_shape_instances_outdated"): 0,
		series("lxd_deployd_shape_instances_ready"):    1,
		continued: 2,
		running:   -1, // no active rollout: no series
	}
	for s, want := range checks {
		if got := sample(text, s); got != want {
			t.Errorf("%s = %v, want %v", s, got, want)
		}
	}

	if strings.Contains(text, a) {
		t.Errorf("an instance name leaked into the labels")
	}
}
