package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

func TestTrailingDataAfterTheBodyIsRefused(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"a"}{"bogus":1}`, 400, "after the JSON value")
	a.expect("POST", "/1.0/deployments", `{"name":"a"} []`, 400, "after the JSON value")
	a.expect("POST", "/1.0/deployments", `{"name":"a"} x`, 400, "after the JSON value")
	a.expect("GET", "/1.0/deployments/a", "", 404, "not found")

	// Whitespace after the value is not data.
	a.expect("POST", "/1.0/deployments", "{\"name\":\"a\",\"description\":\"d\"}\n\t \n", 201, "")
	a.expect("PUT", "/1.0/deployments/a", `{"description":"b"}{"description":"c"}`, 400, "after the JSON value")
	env := a.expect("GET", "/1.0/deployments/a", "", 200, "")
	if env["metadata"].(map[string]any)["description"] != "d" {
		t.Fatalf("a refused PUT changed the deployment: %v", env["metadata"])
	}
}

func TestMalformedQueryEscapesAnswerInTheEnvelope(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments?project=%zz", `{"name":"a"}`, 400, "malformed query")
	a.expect("GET", "/1.0/deployments?recursion=1&project=%", "", 400, "malformed query")
	a.expect("GET", "/1.0/deployments/a", "", 404, "not found")
}

func TestHandlerPanicIsLoggedCountedAndAnswered(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	eps := []rest.Endpoint{{Path: "/boom", Get: rest.Action{Public: true, Handler: func(r *http.Request) response.Response { panic("kaboom") }}}}
	router := rest.NewRouter(eps, func(r *http.Request) (*auth.Caller, error) { return &auth.Caller{}, nil }, logger, false)

	before := rest.HandlerPanics()
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("got %d", rec.Code)
	}

	var envelope map[string]any
	err := json.Unmarshal(rec.Body.Bytes(), &envelope)
	if err != nil || !strings.Contains(envelope["error"].(string), "request id") {
		t.Fatalf("not an envelope naming a request id: %s", rec.Body.String())
	}

	id := strings.TrimSuffix(strings.Fields(strings.SplitN(envelope["error"].(string), "request id ", 2)[1])[0], "):")
	id = strings.TrimSuffix(id, ")")
	line := logs.String()
	if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "kaboom") || !strings.Contains(line, "request_id="+id) {
		t.Fatalf("panic not logged at error level with its request id %s:\n%s", id, line)
	}

	if rest.HandlerPanics() != before+1 {
		t.Fatalf("panic not counted")
	}

	// Admins see the count.
	srv := serverAPI{lxd: backend.NewLXD("/nonexistent", logger), addresses: func() []string { return nil }}.server(t.Context(), &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true})
	if srv.Environment == nil || srv.Environment.HandlerPanics < before+1 {
		t.Fatalf("GET /1.0 does not show the panic count: %+v", srv.Environment)
	}
}
