package backend

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkExecCheckClient prices the daemon's side of an exec check without LXD: the
// exec's POST and its /wait answered at once by a server on a unix socket in the same
// process (whose own cost is in the figures too), over ChecksClient's kept-alive
// connections. Allocations per check are what to watch: at 100 checks a second they are
// the garbage collector's work.
func BenchmarkExecCheckClient(b *testing.B) {
	s := newChecksServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"type":"async","status":"Operation created","status_code":100,"operation":"/1.0/operations/0b5e1b4c-5a3e-4f8e-9d43-0f0c4c0e8a11","error_code":0,"error":"","metadata":{"id":"0b5e1b4c-5a3e-4f8e-9d43-0f0c4c0e8a11","class":"task","description":"Executing command","created_at":"2026-11-25T03:00:00Z","updated_at":"2026-11-25T03:00:00Z","status":"Running","status_code":103,"resources":{"instances":["/1.0/instances/c1"]},"metadata":{"command":["sh","-c","true"],"environment":{"LXD_DEPLOYD_CHECK":"x"},"interactive":false},"may_cancel":false,"err":"","location":"none"}}`+"\n")
			return
		}

		_, _ = io.WriteString(w, `{"type":"sync","status":"Success","status_code":200,"operation":"","error_code":0,"error":"","metadata":{"id":"0b5e1b4c-5a3e-4f8e-9d43-0f0c4c0e8a11","class":"task","description":"Executing command","created_at":"2026-11-25T03:00:00Z","updated_at":"2026-11-25T03:00:00Z","status":"Success","status_code":200,"resources":{"instances":["/1.0/instances/c1"]},"metadata":{"return":0},"may_cancel":false,"err":"","location":"none"}}`+"\n")
	}))

	c := s.client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := ExecCheck(ctx, c, "p1", "c1", []string{"sh", "-c", "true"}, map[string]string{CheckMarkerEnv: "x"}, false, 0)
		if err != nil || out.ExitCode != 0 {
			b.Fatal(out, err)
		}
	}
}
