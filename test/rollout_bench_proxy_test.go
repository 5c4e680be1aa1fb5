package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// lxdCounter is a unix socket in front of a private LXD that counts the requests the
// daemon makes of it, by method and path (listings apart by their query), so that a
// benchmark can say what a rollout or a launch asks of LXD.
type lxdCounter struct {
	Socket string

	mu     sync.Mutex
	counts map[string]int
}

// newLXDCounter serves socket (in a fresh directory) and forwards everything to lxdSocket,
// websockets (events, exec) included.
func newLXDCounter(b testing.TB, lxdSocket string) *lxdCounter {
	dir, err := os.MkdirTemp("", "s23-lxdcount-")
	must(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &lxdCounter{Socket: filepath.Join(dir, "unix.socket"), counts: map[string]int{}}
	listener, err := net.Listen("unix", c.Socket)
	must(b, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "lxd"})
	proxy.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", lxdSocket)
	}}

	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.count(r)
		proxy.ServeHTTP(w, r)
	})}

	go func() { _ = server.Serve(listener) }()
	b.Cleanup(func() { _ = server.Close() })
	return c
}

// requestKind names a request by method and path, with instance and operation names
// replaced, and says whether a listing is filtered.
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) >= 3 && (parts[1] == "instances" || parts[1] == "operations") {
		parts[2] = "{name}"
	}

	kind := r.Method + " /" + strings.Join(parts, "/")
	q := r.URL.Query()
	if q.Get("recursion") != "" {
		kind += "?recursion=" + q.Get("recursion")
	}

	if q.Get("filter") != "" {
		kind += "&filter"
	}

	return kind
}

func (c *lxdCounter) count(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[requestKind(r)]++
}

// take returns the counts since the last take, and starts again from zero.
func (c *lxdCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := c.counts
	c.counts = map[string]int{}
	return counts
}

// print prints counts, most first.
func printCounts(counts map[string]int, indent string) {
	var kinds []string
	for kind := range counts {
		kinds = append(kinds, kind)
	}

	sort.Slice(kinds, func(i, j int) bool { return counts[kinds[i]] > counts[kinds[j]] })
	for _, kind := range kinds {
		fmt.Printf("%s%6d  %s\n", indent, counts[kind], kind)
	}
}
