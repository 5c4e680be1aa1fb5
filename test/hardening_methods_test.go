package test

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRequestMethodsCannotGrowMetrics (issue 32 item 2): the request method was a metrics
// label as sent. Without authentication, 200 requests with random methods added about
// 3,300 series and 20 with 256 KiB methods made one scrape 75 MiB, kept until restart.
// Each is now answered 501 and counted as method="other": the scrape keeps its size. The
// daemon runs in a memory cgroup of its own.
func TestRequestMethodsCannotGrowMetrics(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{MemoryLimit: 512 << 20})
	unix := d.Unix(t)
	_, _, err := unix.GetServer()
	must(t, err)
	before := scrape(t, unix)

	conn, err := tls.Dial("tcp", d.HTTPSAddress, &tls.Config{InsecureSkipVerify: true})
	must(t, err)
	defer func() { _ = conn.Close() }()
	reader := bufio.NewReader(conn)
	send := func(method string) {
		t.Helper()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		_, err := fmt.Fprintf(conn, "%s /1.0 HTTP/1.1\r\nHost: x\r\n\r\n", method)
		must(t, err)
		resp, err := http.ReadResponse(reader, nil)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), `"error_code":501`) || len(body) > 1024 {
			t.Fatalf("a method of %d bytes: %d %.200s", len(method), resp.StatusCode, body)
		}
	}

	for i := 0; i < 200; i++ {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		send("M" + strings.ToUpper(hex.EncodeToString(b)))
	}

	long := strings.Repeat("X", 256<<10)
	for i := 0; i < 20; i++ {
		send(long[:len(long)-i])
	}

	after := scrape(t, unix)
	series := func(text string) int {
		n := 0
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "lxd_deployd_api_request") {
				n++
			}
		}

		return n
	}

	// Two new series in each family (counter, and histogram with its buckets, 15 lines):
	// method="other" of the 501s and the first scrape's own GET /1.0/metrics.
	if series(after) > series(before)+30 || len(after) > len(before)+32<<10 {
		t.Fatalf("220 requests with made-up methods grew the API series from %d to %d lines and the scrape from %d to %d bytes", series(before), series(after), len(before), len(after))
	}

	if sample(after, `lxd_deployd_api_requests_total{code="501",method="other",route="unmatched"}`) != 220 {
		t.Fatalf("the refused requests are not counted as method other:\n%s", after)
	}
}
