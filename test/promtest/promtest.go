// Package promtest runs a real, private Prometheus server (Debian's prometheus package) for
// tests, scraping targets the test controls, such as an [Exporter] whose text the test sets.
// Tests check what the real server answers; nothing fakes its API.
package promtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ScrapeInterval is how often the server scrapes its targets (and evaluates).
const ScrapeInterval = time.Second

// Server is a private Prometheus server.
type Server struct {
	// URL is the server's address, http://127.0.0.1:port.
	URL string

	// Dir holds its configuration, its data (data/) and its log (prometheus.log).
	Dir string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs Prometheus on a loopback port with its own data directory, scraping the given
// host:port targets every ScrapeInterval under job "test", and returns once every target
// has been scraped successfully. It is stopped (and its log shown on failure) at cleanup.
func Start(t testing.TB, targets ...string) *Server {
	t.Helper()
	binary, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is missing: install the Debian package prometheus (make deps-test does)")
	}

	dir := t.TempDir()
	quoted := make([]string, 0, len(targets))
	for _, target := range targets {
		quoted = append(quoted, fmt.Sprintf("%q", target))
	}

	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: test
    static_configs:
      - targets: [%[2]s]
`, ScrapeInterval, strings.Join(quoted, ", "))
	err = os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}

	address := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := &Server{URL: "http://" + address, Dir: dir}
	s.cmd = exec.Command(binary, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+address,
		"--storage.tsdb.retention.time=1h", "--log.level=warn")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = s.cmd.Start()
	if err != nil {
		t.Fatalf("start prometheus: %v", err)
	}

	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.Stop()
		_ = logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", data)
		}
	})

	// Ready, then every target scraped once: a query before that finds no data.
	deadline := time.Now().Add(60 * time.Second)
	why := ""
	for time.Now().Before(deadline) {
		why = s.allUp(len(targets))
		if why == "" {
			return s
		}

		time.Sleep(200 * time.Millisecond)
	}

	data, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	t.Fatalf("prometheus at %s did not scrape its targets within 60s: %s\n%s", s.URL, why, data)
	return nil
}

// allUp returns "" once the server is ready and all n targets are up, or what is missing.
func (s *Server) allUp(n int) string {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(s.URL + "/api/v1/targets?state=active")
	if err != nil {
		return err.Error()
	}

	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}

	err = json.NewDecoder(resp.Body).Decode(&answer)
	if err != nil {
		return fmt.Sprintf("HTTP %d: %v", resp.StatusCode, err)
	}

	up := 0
	var states []string
	for _, target := range answer.Data.ActiveTargets {
		states = append(states, fmt.Sprintf("%s %s %s", target.ScrapeURL, target.Health, target.LastError))
		if target.Health == "up" {
			up++
		}
	}

	if up < n {
		return fmt.Sprintf("%d of %d targets up: %s", up, n, strings.Join(states, "; "))
	}

	return ""
}

// Stop stops the server and returns once it has exited (queries then fail to connect); the
// test's cleanup does it otherwise.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Exporter is a scrape target serving the text the test sets, in Prometheus' text format.
type Exporter struct {
	srv *httptest.Server

	mu   sync.Mutex
	text string
}

// NewExporter starts an exporter on a loopback port serving text (lines such as
// `requests{shape="web"} 5`; "" serves no series). It stops at cleanup.
func NewExporter(t testing.TB, text string) *Exporter {
	t.Helper()
	e := &Exporter{text: text}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		text := e.text
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, text)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// Target is the exporter's host:port, for [Start].
func (e *Exporter) Target() string {
	return strings.TrimPrefix(e.srv.URL, "http://")
}

// Set changes what the exporter serves from the next scrape on.
func (e *Exporter) Set(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.text = text
}

func freePort(t testing.TB) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port
}
