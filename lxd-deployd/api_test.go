package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/datadir"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// testAPI serves the real route table over a real dqlite; the caller is chosen per request.
type testAPI struct {
	t      *testing.T
	router http.Handler
	caller *auth.Caller
	db     *db.Cluster

	// daemon is the daemon the routes belong to (its engines, for tests that drive them).
	daemon *daemon
}

func newTestAPI(t *testing.T) *testAPI {
	t.Helper()
	cluster := dbtest.Open(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &testAPI{t: t, caller: &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}, db: cluster}
	sockets, err := governor.NewListener(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	cert, err := datadir.ServerCertificate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// The daemon as run builds it (newDaemon), on a dqlite of the test's and no LXD, without
	// listeners or background work (start): the routes tested here are the daemon's own.
	opened := &opened{config: config{httpsAddress: "127.0.0.1:8444", lxdSocket: "/nonexistent"}, db: cluster, cert: cert, governors: sockets, member: "test"}
	d, err := newDaemon(opened, logger, nil)
	if err != nil {
		t.Fatal(err)
	}

	a.daemon = d
	handlers := d.apis()
	a.router = rest.Observe(rest.NewRouter(endpoints(handlers), func(r *http.Request) (*auth.Caller, error) { return a.caller, nil }, logger, false), logger, handlers.metrics.metrics)
	return a
}

// do sends a request and returns the status and the decoded envelope.
func (a *testAPI) do(method string, path string, body string, headers ...string) (int, map[string]any, http.Header) {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}

	rec := httptest.NewRecorder()
	a.router.ServeHTTP(rec, req)
	envelope := map[string]any{}
	err := json.Unmarshal(rec.Body.Bytes(), &envelope)
	if err != nil {
		a.t.Fatalf("%s %s: answer is not JSON: %s", method, path, rec.Body.String())
	}

	if code, _ := envelope["error_code"].(float64); rec.Code >= 400 && int(code) != rec.Code {
		a.t.Errorf("%s %s: error_code %v differs from HTTP status %d", method, path, envelope["error_code"], rec.Code)
	}

	return rec.Code, envelope, rec.Header()
}

// expect sends a request and checks its status, and that an error message contains want.
func (a *testAPI) expect(method string, path string, body string, status int, want string) map[string]any {
	a.t.Helper()
	code, envelope, _ := a.do(method, path, body)
	if code != status {
		a.t.Fatalf("%s %s %s: got %d %v, want %d", method, path, body, code, envelope, status)
	}

	if want != "" && !strings.Contains(envelope["error"].(string), want) {
		a.t.Fatalf("%s %s: error %q does not mention %q", method, path, envelope["error"], want)
	}

	return envelope
}

const shapeBody = `{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":1,"scaling_maximum":3}`

func TestDeploymentsAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1","description":"first"}`, 201, "")
	a.expect("POST", "/1.0/deployments?project=p2", `{"name":"dep1"}`, 201, "")

	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/1.0/deployments", `{"name":"dep1"}`, 409, "already exists"},
		{"POST", "/1.0/deployments", `{"name":"1dep"}`, 400, "must not start"},
		{"POST", "/1.0/deployments", `{"name":"d2","config":{"nope":"x"}}`, 400, "nope"},
		{"POST", "/1.0/deployments", `{"name":"d2","governor_webhook_url":"ftp://x"}`, 400, "governor_webhook_url"},
		{"POST", "/1.0/deployments", `{"name":"d2","bogus":1}`, 400, "bogus"},
		{"POST", "/1.0/deployments", `not json`, 400, "invalid request body"},
		{"POST", "/1.0/deployments", ``, 400, "empty"},
		{"POST", "/1.0/deployments", `{"name":"d2","description":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "limit"},
		{"POST", "/1.0/deployments?project=bad%2Fproject", `{"name":"d2"}`, 400, "project"},
		{"POST", "/1.0/deployments?project=bad%20project", `{"name":"d2"}`, 400, "project"},
		{"GET", "/1.0/deployments/nope", "", 404, "not found"},
		{"GET", "/1.0/deployments?recursion=x", "", 400, "recursion"},
		{"PUT", "/1.0/deployments/dep1", `{"config":{"nope":"x"}}`, 400, "nope"},
		{"POST", "/1.0/deployments/dep1", `{"name":""}`, 400, "required"},
		{"DELETE", "/1.0/nothing", "", 404, "no such API endpoint"},
		{"PATCH", "/1.0/deployments", "{}", 405, "not allowed"},
	}

	for _, tt := range tests {
		a.expect(tt.method, tt.path, tt.body, tt.status, tt.want)
	}

	// Nothing above changed anything.
	list := a.expect("GET", "/1.0/deployments", "", 200, "")
	if urls := list["metadata"].([]any); len(urls) != 1 || urls[0] != "/1.0/deployments/dep1" {
		t.Fatalf("deployments: %v", urls)
	}

	list = a.expect("GET", "/1.0/deployments?project=p2", "", 200, "")
	if urls := list["metadata"].([]any); len(urls) != 1 || urls[0] != "/1.0/deployments/dep1?project=p2" {
		t.Fatalf("deployments of p2: %v", urls)
	}

	// ETags: a stale If-Match is refused with 412; the current one works.
	_, _, headers := a.do("GET", "/1.0/deployments/dep1", "")
	etag := headers.Get("ETag")
	code, _, _ := a.do("PATCH", "/1.0/deployments/dep1", `{"config":{"user.a":"1"}}`, "If-Match", etag)
	if code != 200 {
		t.Fatalf("PATCH with current ETag: %d", code)
	}

	code, envelope, _ := a.do("PUT", "/1.0/deployments/dep1", `{"description":"x"}`, "If-Match", etag)
	if code != 412 {
		t.Fatalf("PUT with stale ETag: %d %v", code, envelope)
	}

	a.expect("PATCH", "/1.0/deployments/dep1", `{"config":{"user.b":"2"}}`, 200, "")
	d := a.expect("GET", "/1.0/deployments/dep1", "", 200, "")["metadata"].(map[string]any)
	config := d["config"].(map[string]any)
	if config["user.a"] != "1" || config["user.b"] != "2" || d["description"] != "first" {
		t.Fatalf("PATCH must merge: %v", d)
	}

	a.expect("PUT", "/1.0/deployments/dep1", `{"description":"second"}`, 200, "")
	d = a.expect("GET", "/1.0/deployments/dep1", "", 200, "")["metadata"].(map[string]any)
	if len(d["config"].(map[string]any)) != 0 || d["description"] != "second" {
		t.Fatalf("PUT must replace: %v", d)
	}

	// Rename, then the old name is gone.
	a.expect("POST", "/1.0/deployments", `{"name":"dep2"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1", `{"name":"dep2"}`, 409, "already exists")
	a.expect("POST", "/1.0/deployments/dep1", `{"name":"dep3"}`, 201, "")
	a.expect("GET", "/1.0/deployments/dep1", "", 404, "")
	a.expect("GET", "/1.0/deployments/dep3", "", 200, "")
	a.expect("DELETE", "/1.0/deployments/dep3", "", 200, "")
	a.expect("GET", "/1.0/deployments/dep3", "", 404, "")
}

func TestShapesAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")

	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/1.0/deployments/dep1/shapes", shapeBody, 409, "already exists"},
		{"POST", "/1.0/deployments/nope/shapes", shapeBody, 404, "nope"},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","scaling_minimum":3,"scaling_maximum":1}`, 400, "scaling_maximum"},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","scaling_minimum":-1,"scaling_maximum":1}`, 400, "scaling_minimum"},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","instance_template":{"name":"x"}}`, 400, "instance_template.name"},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","instance_template":{"type":"pod"}}`, 400, "instance_template.type"},
		{"POST", "/1.0/deployments/dep1/shapes", `{"name":"s_2"}`, 400, "invalid character"},
		{"GET", "/1.0/deployments/dep1/shapes/nope", "", 404, "nope"},
		{"PUT", "/1.0/deployments/dep1/shapes/web", `{"scaling_minimum":2,"scaling_maximum":1}`, 400, "scaling_maximum"},
	}

	for _, tt := range tests {
		a.expect(tt.method, tt.path, tt.body, tt.status, tt.want)
	}

	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	if shape["scaling_maximum"] != float64(3) || shape["scaling_current"] != float64(0) {
		t.Fatalf("shape: %v", shape)
	}

	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":5}`, 200, "")
	shape = a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	template := shape["instance_template"].(map[string]any)["source"].(map[string]any)
	if shape["scaling_maximum"] != float64(5) || shape["scaling_minimum"] != float64(1) || template["alias"] != "busybox" {
		t.Fatalf("PATCH must merge: %v", shape)
	}

	list := a.expect("GET", "/1.0/deployments/dep1/shapes?recursion=1", "", 200, "")["metadata"].([]any)
	if len(list) != 1 {
		t.Fatalf("shapes: %v", list)
	}

	d := a.expect("GET", "/1.0/deployments/dep1", "", 200, "")["metadata"].(map[string]any)
	if _, ok := d["deployment_shapes"].(map[string]any)["web"]; !ok {
		t.Fatalf("deployment_shapes lacks web: %v", d)
	}

	a.expect("POST", "/1.0/deployments/dep1/shapes/web", `{"name":"www"}`, 201, "")
	a.expect("DELETE", "/1.0/deployments/dep1/shapes/www", "", 200, "")
	a.expect("GET", "/1.0/deployments/dep1/shapes/www", "", 404, "")
}

func TestKeysAndCertificatesAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")

	// A token request needs a name; with one it answers with an LXD-format token.
	a.expect("POST", "/1.0/certificates", `{"token":true}`, 400, "name")
	token := a.expect("POST", "/1.0/certificates", `{"token":true,"name":"laptop"}`, 200, "")["metadata"].(map[string]any)
	if token["token"] == "" || token["secret"] == "" || token["client_name"] != "laptop" {
		t.Fatalf("token: %v", token)
	}

	a.expect("POST", "/1.0/certificates", `{"name":"x","certificate":"garbage!"}`, 400, "certificate")
	a.expect("POST", "/1.0/certificates", `{"name":"x","type":"root","certificate":"x"}`, 400, "type")
	a.expect("POST", "/1.0/certificates", `{"name":"x","restricted":true}`, 400, "restricted")

	fingerprint := strings.Repeat("a", 64)
	a.expect("POST", "/1.0/deployments/dep1/keys", `{"name":"k1","certificate_fingerprint":"`+fingerprint+`"}`, 400, "not in the trust store")
	a.expect("POST", "/1.0/deployments/dep1/keys", `{"name":"k1","certificate_fingerprint":"short"}`, 400, "fingerprint")
	a.expect("POST", "/1.0/deployments/dep1/keys", `{"name":"k1","role":"owner","certificate_fingerprint":"`+fingerprint+`"}`, 400, "role")
	a.expect("GET", "/1.0/deployments/dep1/keys/k1", "", 404, "k1")
	a.expect("GET", "/1.0/certificates/"+fingerprint, "", 404, "")
}

func TestManagementNeedsAdmin(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")

	callers := map[string]*auth.Caller{
		"untrusted":   {Protocol: auth.ProtocolTLS},
		"deployments": {Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: "deployments", Fingerprint: strings.Repeat("b", 64), Name: "gov"},
	}

	routes := [][2]string{
		{"GET", "/1.0/deployments"}, {"POST", "/1.0/deployments"}, {"GET", "/1.0/deployments/dep1"},
		{"PUT", "/1.0/deployments/dep1"}, {"PATCH", "/1.0/deployments/dep1"}, {"POST", "/1.0/deployments/dep1"},
		{"DELETE", "/1.0/deployments/dep1"}, {"GET", "/1.0/deployments/dep1/keys"}, {"POST", "/1.0/deployments/dep1/keys"},
		{"GET", "/1.0/deployments/dep1/shapes"}, {"POST", "/1.0/deployments/dep1/shapes"}, {"GET", "/1.0/certificates"},
		{"DELETE", "/1.0/certificates/abc"},
	}

	for name, caller := range callers {
		a.caller = caller
		for _, route := range routes {
			a.expect(route[0], route[1], `{"name":"x"}`, 403, "")
		}

		// GET /1.0 is public; POST /1.0/certificates only redeems tokens.
		a.expect("GET", "/1.0", "", 200, "")
		a.expect("POST", "/1.0/certificates", `{"token":true,"name":"x"}`, 403, "")
		_ = name
	}

	a.caller = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	a.expect("GET", "/1.0/deployments/dep1", "", 200, "")
}

func TestRouterRefusesActionWithoutAccessCheck(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering an action with no access check must panic")
		}
	}()

	rest.NewRouter([]rest.Endpoint{{Path: "/x", Get: rest.Action{Handler: nil}, Post: rest.Action{Handler: func(r *http.Request) response.Response { return nil }}}}, nil, slog.Default(), false)
}

func TestInstancesWithoutLXD(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")

	// Without LXD, instance changes answer 503 with the reason and reserve nothing.
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/instances/web1", "", 503, "LXD is unavailable")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web/instances/web1/state", `{"action":"start"}`, 503, "LXD is unavailable")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web/instances/web1/state", `{"action":"explode"}`, 400, "action")
	a.expect("GET", "/1.0/deployments/dep1/shapes/web/instances/web1", "", 404, "web1")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/instances/1bad", "", 400, "instance")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/instances/web1", `{"instance_name":"other"}`, 400, "agree")
	list := a.expect("GET", "/1.0/deployments/dep1/shapes/web/instances", "", 200, "")["metadata"].([]any)
	if len(list) != 0 {
		t.Fatalf("a refused launch must not leave a row: %v", list)
	}

	a.expect("GET", "/1.0/operations", "", 200, "")
	a.expect("GET", "/1.0/operations/nope", "", 404, "")
}

func TestShapeStatus(t *testing.T) {
	for _, tt := range []struct {
		current, min, max int
		want              string
	}{{0, 0, 0, "ok"}, {2, 1, 3, "ok"}, {0, 1, 3, "out-of-bounds"}, {4, 1, 3, "out-of-bounds"}} {
		if got := api.ShapeStatus(tt.current, tt.min, tt.max); got != tt.want {
			t.Errorf("ShapeStatus(%d, %d, %d) = %s", tt.current, tt.min, tt.max, got)
		}
	}
}

func TestWebhookAPI(t *testing.T) {
	a := newTestAPI(t)
	created := a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")["metadata"].(map[string]any)
	secret := created["secret"].(string)
	if len(secret) != 64 {
		t.Fatalf("create must show the webhook secret once: %v", created)
	}

	d := a.expect("GET", "/1.0/deployments/dep1", "", 200, "")
	if strings.Contains(fmt.Sprint(d), secret) {
		t.Fatal("the secret must never appear in GET")
	}

	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/scale-request", `{"target":2}`, 409, "governor_webhook_url")
	a.expect("PATCH", "/1.0/deployments/dep1", `{"governor_webhook_url":"http://127.0.0.1:9/hook","config":{"webhook.retry_max_attempts":"2"}}`, 200, "")
	a.expect("PATCH", "/1.0/deployments/dep1", `{"config":{"webhook.timeout":"never"}}`, 400, "webhook.timeout")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/scale-request", `{"target":9}`, 400, "outside")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/scale-request", `{"target":2,"reason":"peak"}`, 201, "")
	list := a.expect("GET", "/1.0/deployments/dep1/webhook/deliveries", "", 200, "")["metadata"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["type"] != "scale-request" || list[0].(map[string]any)["status"] != "pending" {
		t.Fatalf("deliveries: %v", list)
	}

	id := list[0].(map[string]any)["id"].(string)
	one := a.expect("GET", "/1.0/deployments/dep1/webhook/deliveries/"+id, "", 200, "")["metadata"].(map[string]any)
	event := one["event"].(map[string]any)
	if event["deployment"] != "dep1" || event["metadata"].(map[string]any)["target"] != float64(2) {
		t.Fatalf("delivery event: %v", one)
	}

	a.expect("POST", "/1.0/deployments/dep1/webhook/deliveries/"+id+"/redeliver", "", 200, "")
	a.expect("GET", "/1.0/deployments/dep1/webhook/deliveries/nope", "", 404, "")

	rotated := a.expect("POST", "/1.0/deployments/dep1/webhook/secret", "", 200, "")["metadata"].(map[string]any)["secret"]
	shown := a.expect("GET", "/1.0/deployments/dep1/webhook/secret", "", 200, "")["metadata"].(map[string]any)["secret"]
	if rotated == secret || rotated != shown {
		t.Fatalf("rotation: %v %v %v", secret, rotated, shown)
	}
}

// phase runs one named phase of a long scenario as a subtest, so that a failure names the
// phase; a phase that fails ends the scenario, as later phases build on what it left (as
// test/helpers_check_test.go's phase does). testAPI's helpers fail the scenario's t.
func phase(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
