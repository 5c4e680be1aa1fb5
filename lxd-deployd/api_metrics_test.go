package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// scrape reads /1.0/metrics as the current caller, in the text format.
func (a *testAPI) scrape() (int, string) {
	a.t.Helper()
	req := httptest.NewRequest("GET", "/1.0/metrics", nil)
	rec := httptest.NewRecorder()
	a.router.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestMetricsAccess(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")

	code, body := a.scrape()
	if code != http.StatusOK {
		t.Fatalf("admin scrape: %d %s", code, body)
	}

	for _, want := range []string{
		`lxd_deployd_shape_instances{deployment="dep1",project="default",shape="web"} 0`,
		`lxd_deployd_shape_instances_minimum{deployment="dep1",project="default",shape="web"} 1`,
		`lxd_deployd_shape_instances_maximum{deployment="dep1",project="default",shape="web"} 3`,
		`lxd_deployd_api_requests_total{code="201",method="POST",route="/1.0/deployments/{deployment}/shapes"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}

	// A metrics certificate reads metrics and nothing else.
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeMetrics, Fingerprint: strings.Repeat("a", 64), Name: "prometheus"}
	code, _ = a.scrape()
	if code != http.StatusOK {
		t.Fatalf("metrics certificate scrape: %d", code)
	}

	for _, path := range []string{"/1.0/deployments", "/1.0/deployments/dep1", "/1.0/deployments/dep1/shapes", "/1.0/operations", "/1.0/events", "/1.0/certificates"} {
		a.expect("GET", path, "", 403, "metrics")
	}

	// Untrusted clients and deployments certificates do not read metrics.
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS}
	a.expect("GET", "/1.0/metrics", "", 403, "not trusted")
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeDeployments, Fingerprint: strings.Repeat("b", 64)}
	a.expect("GET", "/1.0/metrics", "", 403, "may not read metrics")
}

func TestRequestID(t *testing.T) {
	a := newTestAPI(t)
	_, _, headers := a.do("GET", "/1.0", "", rest.RequestIDHeader, "abc-123")
	if headers.Get(rest.RequestIDHeader) != "abc-123" {
		t.Fatalf("client's request id not kept: %q", headers.Get(rest.RequestIDHeader))
	}

	// An id that could break a log line is replaced, not echoed.
	_, _, headers = a.do("GET", "/1.0", "", rest.RequestIDHeader, "bad id\nwith newline")
	got := headers.Get(rest.RequestIDHeader)
	if got == "" || strings.ContainsAny(got, " \n") {
		t.Fatalf("bad request id kept or none made: %q", got)
	}

	_, _, headers = a.do("GET", "/1.0/nowhere", "")
	if len(headers.Get(rest.RequestIDHeader)) != 32 {
		t.Fatalf("no request id made for an unmatched path: %q", headers.Get(rest.RequestIDHeader))
	}

	_, body := a.scrape()
	if !strings.Contains(body, `route="unmatched"`) || strings.Contains(body, "nowhere") {
		t.Fatal("an unmatched path was not counted under route=\"unmatched\"")
	}
}
