package test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// rawRequest sends one request exactly as written (method, raw path with its escapes,
// headers, body) over a fresh TLS connection presenting id, and returns the status and
// the body. No client library stands between the test and the daemon's parser.
func rawRequest(t *testing.T, d *daemon, id *identity, method string, path string, body string, headers ...string) (int, []byte) {
	t.Helper()
	pair, err := tls.X509KeyPair([]byte(id.CertPEM), []byte(id.KeyPEM))
	must(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(d.ServerCert))
	conn, err := tls.Dial("tcp", d.HTTPSAddress, &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	must(t, err)
	defer func() { _ = conn.Close() }()

	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path, d.HTTPSAddress)
	if body != "" {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}

	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", headers[i], headers[i+1])
	}

	req.WriteString("\r\n")
	req.WriteString(body)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	// A server that refuses a large body answers and closes before reading it all: the
	// write may fail, the answer is still there to read.
	_, _ = io.WriteString(conn, req.String())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	must(t, err)
	return resp.StatusCode, data
}

// snapshot is everything an admin can read that a bad request could change.
func snapshot(t *testing.T, c *client.Server) string {
	t.Helper()
	var out strings.Builder
	get := func(path string) {
		resp, _, err := c.Query(http.MethodGet, path, nil, "")
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", path, err)
			return
		}

		fmt.Fprintf(&out, "%s: %s\n", path, resp.Metadata)
	}

	for _, project := range []string{"default", "p2"} {
		resp, _, err := c.Query(http.MethodGet, "/1.0/deployments?project="+project, nil, "")
		must(t, err)
		fmt.Fprintf(&out, "deployments %s: %s\n", project, resp.Metadata)
		var urls []string
		must(t, json.Unmarshal(resp.Metadata, &urls))
		for _, u := range urls {
			get(u)
			base := strings.SplitN(u, "?", 2)[0]
			for _, sub := range []string{"/keys?recursion=1&", "/shapes?recursion=1&", "/manifests?"} {
				get(base + sub + "project=" + project)
			}
		}
	}

	get("/1.0/certificates?recursion=1")
	return out.String()
}

// TestNegativeSuiteOverHTTPS sends over a hundred bad requests, across every resource, as
// an admin over HTTPS: each must get a 4xx in LXD's envelope, and change nothing an admin
// can read.
func TestNegativeSuiteOverHTTPS(t *testing.T) {
	t.Parallel()
	private := lxdtest.Shared(t)
	d := startDaemon(t, daemonOptions{LXDSocket: private.Socket})
	waitLXDOnline(t, d)
	unix := d.Unix(t)
	admin, gov := newIdentity(t), newIdentity(t)
	trustIdentity(t, unix, admin, "admin", "client")
	trustIdentity(t, unix, gov, "gov", "deployments")

	must(t, unix.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{Description: "first", Config: map[string]string{"user.a": "b"}}}))
	must(t, unix.CreateDeploymentShape("dep1", webShape("web", 0, 3)))
	must(t, unix.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "read-only"}, CertificateFingerprint: gov.Fingerprint}))
	_, _, err := unix.Query(http.MethodPost, "/1.0/deployments?project=p2", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}}, "")
	must(t, err)
	_, etag, err := unix.GetDeployment("dep1")
	must(t, err)

	https := d.HTTPS(t, admin)
	before := snapshot(t, https)

	cases := negativeCases(etag, admin, gov)
	if len(cases) < 100 {
		t.Fatalf("only %d cases", len(cases))
	}

	for _, c := range cases {
		status, body := rawRequest(t, d, admin, c.method, c.path, c.body, c.headers...)
		name := c.method + " " + c.path
		if len(name) > 120 {
			name = name[:120] + "..."
		}

		if status != c.status {
			t.Errorf("%s %.80s: got %d %.300s, want %d", name, c.body, status, body, c.status)
			continue
		}

		var envelope lxdapi.Response
		err := json.Unmarshal(body, &envelope)
		if err != nil || envelope.Type != lxdapi.ErrorResponse || envelope.Code != c.status || envelope.Error == "" {
			t.Errorf("%s: answer is not an LXD error envelope with code %d: %.300s", name, c.status, body)
		}

		after := snapshot(t, https)
		if after != before {
			t.Fatalf("%s %.80s changed the state:\n%s", name, c.body, lineDiff(before, after))
		}
	}

	t.Logf("%d bad requests refused with a 4xx in the envelope, nothing changed", len(cases))
}

// negativeCase is a bad request and the 4xx it must get.
type negativeCase struct {
	method, path, body string
	status             int
	headers            []string
}

// negativeCases are TestNegativeSuiteOverHTTPS's bad requests, across every resource, for a
// daemon with deployment dep1 (whose ETag is etag), shape web, key k1 of gov, and an admin.
func negativeCases(etag string, admin *identity, gov *identity) []negativeCase {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	long := strings.Repeat("a", 64)
	shape := func(min int, max int) string {
		return `{"name":"s2","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":` + strconv.Itoa(min) + `,"scaling_maximum":` + strconv.Itoa(max) + `}`
	}

	return []negativeCase{
		// Deployment names.
		{"POST", "/1.0/deployments", `{"name":""}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"1dep"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"-dep"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"a/b"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"a.b"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":".."}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"a b"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"wéb"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"a\u0000b"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"` + long + `"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep1"}`, 409, nil},
		// Deployment bodies.
		{"POST", "/1.0/deployments", ``, 400, nil},
		{"POST", "/1.0/deployments", `null`, 400, nil},
		{"POST", "/1.0/deployments", `[]`, 400, nil},
		{"POST", "/1.0/deployments", `"dep3"`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3"`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3"}{"bogus":1}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3"} x`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","bogus":1}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":3}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","config":{"nope":"x"}}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","config":{"user.a":1}}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","config":{"webhook.timeout":"forever"}}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","config":{"webhook.retry_max_attempts":"1000"}}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","governor_webhook_url":"ftp://x/y"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","governor_webhook_url":"not a url"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","description":"` + strings.Repeat("x", 2<<20) + `"}`, 413, nil},
		{"POST", "/1.0/deployments", deep, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","template":"resources: [{name: a, type: nope.jinja}]"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","template":"resources: [{name: a, type: shape, properties: {bogus: 1}}]"}`, 400, nil},
		{"POST", "/1.0/deployments", `{"name":"dep3","template":": : :"}`, 400, nil},
		{"POST", "/1.0/deployments?dry-run=1", `{"name":"dep3","template":"resources: [{name: a, type: t.py}]","template_imports":{"t.py":"def GenerateConfig(c):\n    return [0] * 1000000000\n"}}`, 400, nil},
		// Projects.
		{"POST", "/1.0/deployments?project=bad%2Fproject", `{"name":"dep3"}`, 400, nil},
		{"POST", "/1.0/deployments?project=bad%20project", `{"name":"dep3"}`, 400, nil},
		{"POST", "/1.0/deployments?project=" + long + long, `{"name":"dep3"}`, 400, nil},
		{"POST", "/1.0/deployments?project=%zz", `{"name":"dep3"}`, 400, nil},
		{"GET", "/1.0/deployments/dep1?project=p2", "", 404, nil},
		{"GET", "/1.0/deployments/dep2", "", 404, nil},
		{"DELETE", "/1.0/deployments/dep2?project=nope", "", 404, nil},
		{"PUT", "/1.0/deployments/dep1?project=p2", `{"description":"x"}`, 404, nil},
		// Escapes and names in paths.
		{"GET", "/1.0/deployments/dep%2F1", "", 404, nil},
		{"GET", "/1.0/deployments/%2e%2e", "", 404, nil},
		{"GET", "/1.0/deployments/dep1%00", "", 404, nil},
		{"DELETE", "/1.0/deployments/%64ep1%2F", "", 404, nil},
		{"GET", "/1.0/deployments/dep1/shapes/web%2F..%2Fweb", "", 404, nil},
		{"GET", "/1.0/deployments?recursion=1&project=%", "", 400, nil},
		{"GET", "/1.0/deployments/%zz", "", 400, nil},
		{"DELETE", "/1.0/deployments/dep1%", "", 400, nil},
		{"PUT", "/1.0/deployments/%G1/shapes/web", `{"scaling_maximum":1}`, 400, nil},
		{"GET", "/1.0/deployments?project=a%zzb", "", 400, nil},
		{"GET", "/1.0/deployments/" + long, "", 404, nil},
		// Recursion.
		{"GET", "/1.0/deployments?recursion=x", "", 400, nil},
		{"GET", "/1.0/deployments?recursion=-1", "", 400, nil},
		{"GET", "/1.0/deployments?recursion=99999999999999999999", "", 400, nil},
		{"GET", "/1.0/deployments/dep1/shapes?recursion=1.5", "", 400, nil},
		{"GET", "/1.0/deployments/dep1/keys?recursion=yes", "", 400, nil},
		// Deployment updates, renames, ETags.
		{"PUT", "/1.0/deployments/dep1", `{"description":"x"}`, 412, []string{"If-Match", `"0000"`}},
		{"PATCH", "/1.0/deployments/dep1", `{"description":"x"}`, 412, []string{"If-Match", `"stale"`}},
		{"PUT", "/1.0/deployments/dep1", `{"description":"x"}{"description":"y"}`, 400, []string{"If-Match", etag}},
		{"PUT", "/1.0/deployments/dep1", `{"config":{"nope":"x"}}`, 400, nil},
		{"PUT", "/1.0/deployments/dep1", `{"config":"x"}`, 400, nil},
		{"PATCH", "/1.0/deployments/dep1", `{"bogus":true}`, 400, nil},
		{"PATCH", "/1.0/deployments/dep1", `{"governor_webhook_url":"gopher://x"}`, 400, nil},
		{"PUT", "/1.0/deployments/nope", `{"description":"x"}`, 404, nil},
		{"POST", "/1.0/deployments/dep1", `{"name":""}`, 400, nil},
		{"POST", "/1.0/deployments/dep1", `{"name":"9x"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1", `{"name":"x","bogus":1}`, 400, nil},
		{"POST", "/1.0/deployments/nope", `{"name":"x"}`, 404, nil},
		{"DELETE", "/1.0/deployments/nope", "", 404, nil},
		// Shapes.
		{"POST", "/1.0/deployments/dep1/shapes", shape(2, 1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", shape(-1, 1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", shape(0, -1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", strings.Replace(shape(0, 1), `"s2"`, `"web"`, 1), 409, nil},
		{"POST", "/1.0/deployments/dep1/shapes", strings.Replace(shape(0, 1), `"s2"`, `"S 2"`, 1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", strings.Replace(shape(0, 1), `1}`, `1e20}`, 1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", strings.Replace(shape(0, 1), `"busybox"`, `5`, 1), 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","config":{"nope":"1"},"scaling_maximum":1}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","config":{"governor.socket":"maybe"},"scaling_maximum":1}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","bogus":1}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2"}{}`, 400, nil},
		{"POST", "/1.0/deployments/nope/shapes", shape(0, 1), 404, nil},
		{"PUT", "/1.0/deployments/dep1/shapes/web", `{"scaling_minimum":4,"scaling_maximum":3}`, 400, nil},
		{"PUT", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":"3"}`, 400, nil},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_minimum":9}`, 400, nil},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":1}`, 412, []string{"If-Match", `"nope"`}},
		{"PUT", "/1.0/deployments/dep1/shapes/nope", `{"scaling_maximum":1}`, 404, nil},
		{"POST", "/1.0/deployments/dep1/shapes/web", `{"name":"1x"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes/nope", `{"name":"x"}`, 404, nil},
		{"DELETE", "/1.0/deployments/dep1/shapes/nope", "", 404, nil},
		{"GET", "/1.0/deployments/dep1/shapes/nope", "", 404, nil},
		// Keys.
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"k2","role":"owner","certificate_fingerprint":"` + gov.Fingerprint + `"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"k2","role":"admin","certificate_fingerprint":"short"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"k2","role":"admin","certificate_fingerprint":"` + strings.Repeat("f", 64) + `"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"k1","role":"admin","certificate_fingerprint":"` + gov.Fingerprint + `"}`, 409, nil},
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"","role":"admin","certificate_fingerprint":"` + gov.Fingerprint + `"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/keys", `{"name":"k2","role":"admin","certificate_fingerprint":"` + admin.Fingerprint + `"}`, 400, nil},
		{"PUT", "/1.0/deployments/dep1/keys/k1", `{"role":"root"}`, 400, nil},
		{"PATCH", "/1.0/deployments/dep1/keys/k1", `{"role":"admin"}`, 412, []string{"If-Match", `"x"`}},
		{"POST", "/1.0/deployments/dep1/keys/k1", `{"name":"-k"}`, 400, nil},
		{"GET", "/1.0/deployments/dep1/keys/nope", "", 404, nil},
		{"DELETE", "/1.0/deployments/dep1/keys/nope", "", 404, nil},
		// Certificates.
		{"POST", "/1.0/certificates", `{"name":"x","certificate":"garbage!"}`, 400, nil},
		{"POST", "/1.0/certificates", `{"name":"x","type":"root","certificate":"x"}`, 400, nil},
		{"POST", "/1.0/certificates", `{"name":"x","restricted":true}`, 400, nil},
		{"POST", "/1.0/certificates", `{"token":true}`, 400, nil},
		{"POST", "/1.0/certificates", `{"name":"x","certificate":"` + strings.ReplaceAll(strings.TrimSpace(admin.CertPEM), "\n", `\n`) + `"}`, 409, nil},
		{"PUT", "/1.0/certificates/" + gov.Fingerprint, `{"type":"superuser"}`, 400, nil},
		{"DELETE", "/1.0/certificates/" + strings.Repeat("0", 64), "", 404, nil},
		{"GET", "/1.0/certificates/zz", "", 404, nil},
		// Manifests and types.
		{"GET", "/1.0/deployments/dep1/manifests/nope", "", 404, nil},
		{"POST", "/1.0/deployments/dep1/manifests/nope/rollback", `{}`, 404, nil},
		{"GET", "/1.0/types/nope.jinja", "", 404, nil},
		// Webhooks.
		{"POST", "/1.0/deployments/dep1/webhook/ping", `{}`, 409, nil},
		{"POST", "/1.0/deployments/dep1/shapes/web/scale-request", `{"target":"three"}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes/web/scale-request", `{"target":99}`, 400, nil},
		{"POST", "/1.0/deployments/dep1/shapes/nope/scale-request", `{"target":1}`, 404, nil},
		{"GET", "/1.0/deployments/dep1/webhook/deliveries/nope", "", 404, nil},
		{"POST", "/1.0/deployments/dep1/webhook/deliveries/nope/redeliver", `{}`, 404, nil},
		// Instances (refused before LXD is asked).
		{"POST", "/1.0/deployments/dep1/shapes/nope/instances/i1", `{}`, 404, nil},
		{"GET", "/1.0/deployments/dep1/shapes/web/instances/nope", "", 404, nil},
		{"PUT", "/1.0/deployments/dep1/shapes/web/instances/nope/state", `{"action":"start"}`, 404, nil},
		{"DELETE", "/1.0/deployments/dep1/shapes/web/instances/nope", "", 404, nil},
		// Operations and events.
		{"GET", "/1.0/operations/nope", "", 404, nil},
		{"DELETE", "/1.0/operations/nope", "", 404, nil},
		{"GET", "/1.0/operations/nope/wait?timeout=x", "", 404, nil},
		{"GET", "/1.0/operations/nope/wait?timeout=%zz", "", 400, nil},
		{"GET", "/1.0/events?type=bogus", "", 400, nil},
		{"GET", "/1.0/events", "", 403, []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Origin", "https://evil.example"}},
		// Methods and routes.
		{"PATCH", "/1.0/deployments", `{}`, 405, nil},
		{"DELETE", "/1.0", "", 405, nil},
		{"PUT", "/1.0/operations", `{}`, 405, nil},
		{"GET", "/1.0/nothing", "", 404, nil},
		{"GET", "/2.0/deployments", "", 404, nil},
	}
}

// lineDiff lists the lines of after that before does not have, and the other way round.
func lineDiff(before string, after string) string {
	in := func(lines []string, l string) bool {
		for _, x := range lines {
			if x == l {
				return true
			}
		}

		return false
	}

	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	var out strings.Builder
	for _, l := range b {
		if !in(a, l) {
			fmt.Fprintf(&out, "- %.400s\n", l)
		}
	}

	for _, l := range a {
		if !in(b, l) {
			fmt.Fprintf(&out, "+ %.400s\n", l)
		}
	}

	return out.String()
}

// TestWebhookURLHiddenFromKeyHolders: a deployments certificate with a read-only key sees
// the webhook URL without its query (where tokens live); an admin sees it whole.
func TestWebhookURLHiddenFromKeyHolders(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	unix := d.Unix(t)
	gov := newIdentity(t)
	trustIdentity(t, unix, gov, "gov", "deployments")
	const hook = "http://127.0.0.1:9/hook?token=s3cret"
	must(t, unix.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{GovernorWebhookURL: hook}}))
	must(t, unix.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "read-only"}, CertificateFingerprint: gov.Fingerprint}))

	seen, _, err := d.HTTPS(t, gov).GetDeployment("dep1")
	must(t, err)
	if strings.Contains(seen.GovernorWebhookURL, "s3cret") || !strings.HasPrefix(seen.GovernorWebhookURL, "http://127.0.0.1:9/hook") {
		t.Fatalf("a read-only key holder sees %q", seen.GovernorWebhookURL)
	}

	whole, _, err := unix.GetDeployment("dep1")
	must(t, err)
	if whole.GovernorWebhookURL != hook {
		t.Fatalf("the admin sees %q", whole.GovernorWebhookURL)
	}
}
