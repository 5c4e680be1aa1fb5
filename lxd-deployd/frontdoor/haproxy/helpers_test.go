package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// needHAProxy skips, saying why, where Debian's haproxy is not installed.
func needHAProxy(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not installed (make deps-test installs it): the driver's integration tests need a real one")
	}
}

// backend is a small HTTP server on a loopback port that says its name; /slow waits
// until release is closed.
type backend struct {
	name    string
	srv     *http.Server
	ln      net.Listener
	port    int
	served  atomic.Int64 // requests from clients, not checks
	inSlow  atomic.Int64
	release chan struct{}
}

func startBackend(t testing.TB, name string) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, ln: ln, port: ln.Addr().(*net.TCPAddr).Port, release: make(chan struct{})}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			b.inSlow.Add(1)
			<-b.release
		}
		// HAProxy's checks send no User-Agent; served counts clients' requests only.
		if r.UserAgent() != "" {
			b.served.Add(1)
		}
		w.Header().Set("X-Backend", b.name)
		io.WriteString(w, b.name)
	})}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.kill() })
	return b
}

// kill closes the listener and every connection at once, as a dying instance would.
func (b *backend) kill() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
	b.srv.Close()
}

// freePort is a loopback port free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls cond until it holds or a generous bound passes (no timing is asserted:
// the bound only stops a broken run).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// load sends GETs at a steady rate from a pool of workers and counts what failed
// (a connection error or a 5xx) and which backend answered.
type load struct {
	url    string
	client *http.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	ok, fail int
	errs     []string
	by       map[string]int
	lat      []time.Duration
}

func startLoad(url string, rate int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{url: url, cancel: cancel, by: map[string]int{}, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 64},
	}}
	tokens := make(chan struct{}, rate)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(tokens)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case tokens <- struct{}{}:
				default: // the workers are behind: the rate is a ceiling
				}
			}
		}
	}()
	for i := 0; i < 16; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for range tokens {
				l.once()
			}
		}()
	}
	return l
}

func (l *load) once() {
	start := time.Now()
	resp, err := l.client.Get(l.url)
	d := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.fail++
		l.errs = append(l.errs, err.Error())
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		l.fail++
		l.errs = append(l.errs, resp.Status)
		return
	}
	l.ok++
	l.by[resp.Header.Get("X-Backend")]++
	l.lat = append(l.lat, d)
}

func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

func (l *load) counts() (ok, fail int, by map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	by = map[string]int{}
	for k, v := range l.by {
		by[k] = v
	}
	return l.ok, l.fail, by
}

func (l *load) report() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := l.errs
	if len(errs) > 5 {
		errs = errs[:5]
	}
	return fmt.Sprintf("%d ok, %d failed %v, by backend %v", l.ok, l.fail, errs, l.by)
}

// get is one request, its status and the backend that answered.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Backend")
}

func hasServer(t testing.TB, admin, be, name string) bool {
	t.Helper()
	st, err := serversState(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Backend == be && s.Name == serverName(name) {
			return true
		}
	}
	return false
}
