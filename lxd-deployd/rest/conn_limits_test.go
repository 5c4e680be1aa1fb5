package rest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/canonical/lxd/shared"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// budgetServer serves GET / over TLS under the limits; a client presenting trustedCert
// authenticates as trusted, any other (or none) as untrusted.
func budgetServer(t *testing.T, l *ConnLimits, trustedCert tls.Certificate) string {
	t.Helper()
	return budgetServerWith(t, l, trustedCert, nil)
}

// budgetServerWith is budgetServer whose GET /slow waits until release is closed.
func budgetServerWith(t *testing.T, l *ConnLimits, trustedCert tls.Certificate, release chan struct{}) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(trustedCert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}

	trusted := auth.Fingerprint(leaf)
	authenticate := l.Authenticated(func(r *http.Request) (*auth.Caller, error) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && auth.Fingerprint(r.TLS.PeerCertificates[0]) == trusted {
			return &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: trusted, CertificateType: "client"}, nil
		}

		return &auth.Caller{Protocol: auth.ProtocolTLS}, nil
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := authenticate(r)
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}

		if r.URL.Path == "/slow" {
			<-release
		}

		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.Config.ConnState = l.ConnState
	srv.Config.ConnContext = l.WithConn
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func clientCert(t *testing.T) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := shared.GenerateMemCert(true, shared.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}

	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}

	return pair
}

// budgetConn is one keep-alive client connection from a loopback source address.
type budgetConn struct {
	net.Conn
	r *bufio.Reader
}

func dialBudget(t *testing.T, address string, source string, cert *tls.Certificate) *budgetConn {
	t.Helper()
	config := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		config.Certificates = []tls.Certificate{*cert}
	}

	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}, Config: config}
	c, err := d.DialContext(context.Background(), "tcp", address)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close() })
	return &budgetConn{Conn: c, r: bufio.NewReader(c)}
}

// get asks GET / and reads the answer's status.
func (c *budgetConn) get() (int, error) {
	return c.getPath("/")
}

// getPath asks GET path and reads the answer's status.
func (c *budgetConn) getPath(path string) (int, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	if err != nil {
		return 0, err
	}

	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}

	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// closed says whether the server closed the connection.
func (c *budgetConn) closed() bool {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.r.Peek(1)
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestConnBudgets: a certificate the trust store does not know counts as untrusted like
// none at all; one address holds at most perSource untrusted connections (a new one
// closes its oldest idle one); a full untrusted budget makes room by closing an idle one
// of the address holding most; trusted callers count in their own budget; idle untrusted
// connections are closed quickly, trusted ones are kept.
func TestConnBudgets(t *testing.T) {
	// The idle time is long enough that no connection of the first steps idles out on a
	// loaded machine (500 ms did, under the parallel end-to-end suites).
	l := NewConnLimits(ConnBudgets{untrusted: 4, perSource: 2, waiting: 1, trusted: 2, untrustedIdle: 3 * time.Second, grace: 5 * time.Second}, nil)
	trustedCert, stranger := clientCert(t), clientCert(t)
	address := budgetServer(t, l, trustedCert)

	// Three strangers from one address: the third closes the first.
	var first []*budgetConn
	for i := 0; i < 3; i++ {
		c := dialBudget(t, address, "127.0.0.2", &stranger)
		code, err := c.get()
		if err != nil || code != http.StatusOK {
			t.Fatalf("stranger %d: %d %v", i, code, err)
		}

		first = append(first, c)
	}

	if !first[0].closed() || first[1].closed() || first[2].closed() || l.count() != 2 {
		t.Fatalf("one address: closed %v %v %v, %d counted", first[0].closed(), first[1].closed(), first[2].closed(), l.count())
	}

	// Two more addresses fill the budget of 4; a fifth connection closes an idle one of
	// the address holding most (127.0.0.2's oldest, 127.0.0.3 holding as many but later).
	var second []*budgetConn
	for _, source := range []string{"127.0.0.3", "127.0.0.3", "127.0.0.4"} {
		c := dialBudget(t, address, source, nil)
		code, err := c.get()
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %v", source, code, err)
		}

		second = append(second, c)
	}

	if !first[1].closed() || first[2].closed() || l.count() != 4 {
		t.Fatalf("a full budget did not close the oldest idle connection of the largest address: %v %v, %d counted", first[1].closed(), first[2].closed(), l.count())
	}

	// A trusted client gets in and counts in its own budget.
	admin := dialBudget(t, address, "127.0.0.5", &trustedCert)
	code, err := admin.get()
	if err != nil || code != http.StatusOK {
		t.Fatalf("trusted: %d %v", code, err)
	}

	l.mu.Lock()
	trusted := l.counts[classTrusted]
	l.mu.Unlock()
	if trusted != 1 || l.count() > 3 {
		t.Fatalf("trusted %d, untrusted %d", trusted, l.count())
	}

	// Idle untrusted connections go after their idle time; the trusted one stays.
	deadline := time.Now().Add(15 * time.Second)
	for l.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}

	if l.count() != 0 || !second[0].closed() || admin.closed() {
		t.Fatalf("after idling: %d untrusted open, 127.0.0.3 closed %v, trusted closed %v", l.count(), second[0].closed(), admin.closed())
	}

	code, err = admin.get()
	if err != nil || code != http.StatusOK {
		t.Fatalf("the trusted connection after idling: %d %v", code, err)
	}
}

// TestConnBudgetsWhenNothingCanMakeRoom: with every untrusted connection busy answering
// (nothing to close), a new connection waits: without a certificate it is closed when
// its request arrives, with a certificate nobody trusts it is closed once looked up, with a
// trusted one it is served. A full trusted budget with nothing idle answers 503.
func TestConnBudgetsWhenNothingCanMakeRoom(t *testing.T) {
	l := NewConnLimits(ConnBudgets{untrusted: 2, perSource: 2, waiting: 2, trusted: 1, untrustedIdle: time.Minute, grace: time.Minute}, nil)
	trustedCert, stranger := clientCert(t), clientCert(t)
	release := make(chan struct{})
	defer close(release)
	address := budgetServerWith(t, l, trustedCert, release)

	// Two untrusted requests being answered hold the untrusted budget.
	for i := 0; i < 2; i++ {
		c := dialBudget(t, address, "127.0.0.2", nil)
		_, err := fmt.Fprintf(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
	}

	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		judged := 0
		for _, tc := range l.conns {
			if tc.judged {
				judged++
			}
		}
		l.mu.Unlock()
		if judged == 2 {
			break
		}

		time.Sleep(10 * time.Millisecond)
	}

	code, err := dialBudget(t, address, "127.0.0.3", nil).get()
	if err == nil {
		t.Fatalf("a certificate-less connection over the budget was answered %d", code)
	}

	code, err = dialBudget(t, address, "127.0.0.3", &stranger).get()
	if err == nil {
		t.Fatalf("an unknown certificate over the budget was answered %d", code)
	}

	// The trusted client is served; a second trusted connection finds the trusted budget
	// (1) busy and nothing idle: 503.
	admin := dialBudget(t, address, "127.0.0.4", &trustedCert)
	_, err = fmt.Fprintf(admin, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}

	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		trusted := l.counts[classTrusted]
		l.mu.Unlock()
		if trusted == 1 {
			break
		}

		time.Sleep(10 * time.Millisecond)
	}

	code, err = dialBudget(t, address, "127.0.0.4", &trustedCert).get()
	if err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("a trusted connection over the trusted budget: %d %v", code, err)
	}

	l.mu.Lock()
	trusted, untrusted, waiting := l.counts[classTrusted], l.counts[classUntrusted], l.counts[classWaiting]
	l.mu.Unlock()
	if trusted != 1 || untrusted != 2 || waiting > 1 {
		t.Fatalf("counted: %d trusted, %d untrusted, %d waiting", trusted, untrusted, waiting)
	}
}
