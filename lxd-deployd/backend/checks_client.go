package backend

import (
	"net/http"
	"time"

	lxd "github.com/canonical/lxd/client"
)

// checksIdleConns is how many idle connections the checks' client keeps to LXD: one per
// check that may run at once (health.Checker's concurrency) and some to spare.
const checksIdleConns = 32

// ChecksClient returns the client the health checks reach LXD with: the same socket as
// Client, over connections kept alive between requests. LXD's client opens a connection per
// request (it turns keep-alives off), which cost the daemon a dial, two goroutines and their
// stacks per request: at 100 exec checks a second, a fifth of its CPU (BenchmarkExecCheckCapacity's
// profile). Only requests that are safe to send again use it (ExecCheck marks its POST so):
// a request written on a connection LXD has just closed is sent again by Go's transport.
func (l *LXD) ChecksClient() (DoHTTPer, error) {
	main, err := l.Client()
	if err != nil {
		return nil, err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checks != nil && l.checksFor == main {
		return l.checks, nil
	}

	checks, err := lxd.ConnectLXDUnix(l.socket, &lxd.ConnectionArgs{
		SkipGetServer: true, // Client's connection already knows the server
		TransportWrapper: func(t *http.Transport) lxd.HTTPTransporter {
			t.DisableKeepAlives = false
			t.MaxIdleConns = checksIdleConns
			t.MaxIdleConnsPerHost = checksIdleConns
			t.IdleConnTimeout = 30 * time.Second
			return keptAlive{t}
		},
	})
	if err != nil {
		return nil, err
	}

	if l.checks != nil {
		l.checks.Disconnect()
	}

	l.checks, l.checksFor = checks, main
	return checks, nil
}

// keptAlive is the transport ChecksClient gives LXD's client, as its wrapper type asks.
type keptAlive struct{ t *http.Transport }

func (k keptAlive) RoundTrip(req *http.Request) (*http.Response, error) { return k.t.RoundTrip(req) }

func (k keptAlive) Transport() *http.Transport { return k.t }
