package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUnknownMethodsAreRefusedAndFolded: request methods are a client's free text (issue
// 32: 200 requests with random methods added about 3,300 series, kept until restart).
// Over real connections, each unknown
// method is answered 501 in the envelope before routing, and the metrics see one
// method="other" whatever was sent: the series and the scrape stay the size they were.
func TestUnknownMethodsAreRefusedAndFolded(t *testing.T) {
	a := newTestAPI(t)
	srv := httptest.NewServer(a.router)
	defer srv.Close()

	metrics := a.daemon.metrics
	series := func() (int, int) {
		families, err := metrics.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}

		count := 0
		for _, f := range families {
			if strings.HasSuffix(f.GetName(), "api_requests_total") || strings.HasSuffix(f.GetName(), "api_request_duration_seconds") {
				count += len(f.GetMetric())
			}
		}

		rec := httptest.NewRecorder()
		metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/1.0/metrics", nil))
		return count, rec.Body.Len()
	}

	send := func(method string) (int, string) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}

		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		go func() { _, _ = fmt.Fprintf(conn, "%s /1.0/deployments HTTP/1.1\r\nHost: x\r\n\r\n", method) }()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("method of %d bytes: %v", len(method), err)
		}

		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(body)
	}

	// A known method is labelled as itself.
	code, _ := send("GET")
	if code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	}

	beforeSeries, beforeSize := series()
	for i := 0; i < 200; i++ {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		code, body := send("X" + strings.ToUpper(hex.EncodeToString(b)))
		if code != http.StatusNotImplemented || !strings.Contains(body, `"error_code":501`) || !strings.Contains(body, "use GET, POST, PUT, PATCH or DELETE") {
			t.Fatalf("random method: %d %s", code, body)
		}
	}

	// The 20 methods of 256 KiB run end to end, in a daemon under a memory limit
	// (TestRequestMethodsCannotGrowMetrics); three are enough here.
	long := strings.Repeat("M", 256<<10)
	for i := 0; i < 3; i++ {
		code, body := send(long[:len(long)-i])
		if code != http.StatusNotImplemented || len(body) > 1024 {
			t.Fatalf("256 KiB method: %d, %d bytes of answer", code, len(body))
		}
	}

	// Lower case is another method (RFC 9110: methods are case-sensitive).
	code, _ = send("get")
	if code != http.StatusNotImplemented {
		t.Fatalf("lower-case get: %d", code)
	}

	afterSeries, afterSize := series()
	// At most the "other" method's counter and histogram for the 501 (route "unmatched").
	if afterSeries > beforeSeries+2 || afterSize > beforeSize+8<<10 {
		t.Fatalf("unknown methods grew the API series from %d to %d and the scrape from %d to %d bytes", beforeSeries, afterSeries, beforeSize, afterSize)
	}

	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/1.0/metrics", nil))
	if !strings.Contains(rec.Body.String(), `method="other"`) || !strings.Contains(rec.Body.String(), `code="501"`) {
		t.Fatalf("the refused requests are not counted as method other, code 501")
	}
}
