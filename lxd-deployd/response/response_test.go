package response

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func render(t *testing.T, r Response) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	err := r.Render(rec)
	if err != nil {
		t.Fatal(err)
	}

	body := map[string]any{}
	err = json.Unmarshal(rec.Body.Bytes(), &body)
	if err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body.String())
	}

	return rec, body
}

func TestSyncEnvelope(t *testing.T) {
	rec, body := render(t, SyncResponseETag(map[string]string{"a": "b"}, "x"))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}

	want := map[string]any{"type": "sync", "status": "Success", "status_code": float64(200), "operation": "", "error_code": float64(0), "error": ""}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("%s = %v, want %v", k, body[k], v)
		}
	}

	if rec.Header().Get("ETag") != fmt.Sprintf("%q", ETag("x")) {
		t.Errorf("ETag header %q", rec.Header().Get("ETag"))
	}
}

func TestSmartError(t *testing.T) {
	tests := []struct {
		err    error
		status int
	}{
		{lxdapi.StatusErrorf(http.StatusConflict, "dup"), 409},
		{fmt.Errorf("wrapped: %w", lxdapi.StatusErrorf(http.StatusNotFound, "gone")), 404},
		{sql.ErrNoRows, 404},
		{&http.MaxBytesError{Limit: 10}, 413},
		{errors.New("boom"), 500},
	}

	for _, tt := range tests {
		rec, body := render(t, SmartError(tt.err))
		if rec.Code != tt.status || body["error_code"] != float64(tt.status) || body["type"] != "error" {
			t.Errorf("%v: got %d %v", tt.err, rec.Code, body)
		}

		if body["error"] == "" {
			t.Errorf("%v: empty error message", tt.err)
		}
	}
}

func TestCheckETag(t *testing.T) {
	r := httptest.NewRequest("PUT", "/", nil)
	if CheckETag(r, "a") != nil {
		t.Fatal("no If-Match must pass")
	}

	r.Header.Set("If-Match", fmt.Sprintf("%q", ETag("a")))
	if CheckETag(r, "a") != nil {
		t.Fatal("matching If-Match must pass")
	}

	_, ok := lxdapi.StatusErrorMatch(CheckETag(r, "b"), http.StatusPreconditionFailed)
	if !ok {
		t.Fatal("stale If-Match must be a 412")
	}
}
