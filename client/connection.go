// Package client is the typed Go client of the lxd-deployd API, for the CLI, governors and
// tests. It never imports the daemon, so programs using it build without cgo.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ConnectionArgs says how to reach and authenticate to a daemon.
type ConnectionArgs struct {
	// TLSClientCert and TLSClientKey are the PEM client key pair used over HTTPS.
	TLSClientCert string
	TLSClientKey  string

	// TLSServerCert pins the server's PEM certificate; the server's certificate is
	// self-signed like LXD's, so it is compared as is instead of chained to a CA.
	TLSServerCert string

	// InsecureSkipVerify accepts any server certificate (only to fetch it the first time).
	InsecureSkipVerify bool

	// Project scopes deployment requests (?project=); empty means "default".
	Project string

	// Timeout bounds every request (default 30s).
	Timeout time.Duration

	// UserAgent is sent with every request.
	UserAgent string

	// TokenSource, when set, gives a fresh bearer token for every request: how a governor
	// inside an instance authenticates (see TokenSigner).
	TokenSource func() (string, error)
}

// Server is a connection to an lxd-deployd daemon.
type Server struct {
	http      *http.Client
	baseURL   string
	project   string
	userAgent string
	token     func() (string, error)
}

// ConnectUnix connects to the daemon's local unix socket (full admin access).
func ConnectUnix(path string, args *ConnectionArgs) (*Server, error) {
	if args == nil {
		args = &ConnectionArgs{}
	}

	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", path)
		},
	}

	return newServer("http://unix.socket", transport, args), nil
}

// ConnectHTTPS connects to the daemon's HTTPS API at address (https://host:port).
func ConnectHTTPS(address string, args *ConnectionArgs) (*Server, error) {
	if args == nil {
		args = &ConnectionArgs{}
	}

	tlsConfig, err := tlsConfig(args)
	if err != nil {
		return nil, err
	}

	address = strings.TrimSuffix(address, "/")
	if !strings.HasPrefix(address, "https://") {
		return nil, fmt.Errorf("address %q must start with https://", address)
	}

	// A governor's concurrent requests (100 launches, then a wait on each) keep their
	// connections: with Go's default of 2 idle per host, every wait after a burst paid a
	// new TLS handshake with client certificate checks, on both sides (issue 20).
	transport := &http.Transport{
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}

	return newServer(address, transport, args), nil
}

func newServer(baseURL string, transport http.RoundTripper, args *ConnectionArgs) *Server {
	timeout := args.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}

	return &Server{
		http:      &http.Client{Transport: transport, Timeout: timeout},
		baseURL:   baseURL,
		project:   args.Project,
		userAgent: args.UserAgent,
		token:     args.TokenSource,
	}
}

// tlsConfig builds the client side of LXD-style TLS: TLS 1.3, our client certificate, and
// the server certificate pinned rather than verified against a CA.
func tlsConfig(args *ConnectionArgs) (*tls.Config, error) {
	// Resumed sessions skip the certificate signatures of a full handshake on both sides
	// (1.8 -> 0.5 ms of CPU per connection with P-384 keys): a governor's burst of
	// launches opens a connection each. The daemon still checks the client certificate
	// against its trust store on every request, resumed or not.
	config := &tls.Config{MinVersion: tls.VersionTLS13, ClientSessionCache: tls.NewLRUClientSessionCache(0)}
	if args.TLSClientCert != "" || args.TLSClientKey != "" {
		pair, err := tls.X509KeyPair([]byte(args.TLSClientCert), []byte(args.TLSClientKey))
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}

		config.Certificates = []tls.Certificate{pair}
	}

	switch {
	case args.InsecureSkipVerify:
		config.InsecureSkipVerify = true
	case args.TLSServerCert != "":
		block, _ := pem.Decode([]byte(args.TLSServerCert))
		if block == nil {
			return nil, errors.New("server certificate is not PEM")
		}

		pinned, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse server certificate: %w", err)
		}

		// The server certificate is self-signed; trust exactly it, whatever name we dialled.
		// VerifyConnection, unlike VerifyPeerCertificate, also runs on a resumed session.
		config.InsecureSkipVerify = true
		config.VerifyConnection = func(state tls.ConnectionState) error {
			if len(state.PeerCertificates) == 0 || !bytes.Equal(state.PeerCertificates[0].Raw, pinned.Raw) {
				return errors.New("server certificate does not match the pinned one: the server changed or this is not the server you added")
			}

			return nil
		}
	}

	return config, nil
}

// UseProject returns a copy of the connection scoped to another LXD project.
func (s *Server) UseProject(project string) *Server {
	copied := *s
	copied.project = project
	return &copied
}

// Project returns the project requests are scoped to.
func (s *Server) Project() string {
	if s.project == "" {
		return api.DefaultProject
	}

	return s.project
}

// path builds an API path from segments, escaping each, under /1.0.
func path(segments ...string) string {
	p := "/1.0"
	for _, segment := range segments {
		p += "/" + url.PathEscape(segment)
	}

	return p
}

// withProject adds ?project= to a path of a project-scoped resource.
func (s *Server) withProject(p string) string {
	if s.project == "" || s.project == api.DefaultProject {
		return p
	}

	separator := "?"
	if strings.Contains(p, "?") {
		separator = "&"
	}

	return p + separator + "project=" + url.QueryEscape(s.project)
}

// Query sends a request and decodes LXD's envelope. An error answer becomes an
// lxdapi.StatusError carrying the HTTP status, so callers can test for it.
func (s *Server) Query(method string, path string, body any, etag string) (*lxdapi.Response, string, error) {
	return s.QueryContext(context.Background(), method, path, body, etag)
}

// QueryContext is Query bounded by ctx as well as the connection's timeout.
func (s *Server) QueryContext(ctx context.Context, method string, path string, body any, etag string) (*lxdapi.Response, string, error) {
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return nil, "", err
		}

		reader = bytes.NewReader(encoded)
	}

	req, err := http.NewRequestWithContext(ctx, method, s.baseURL+path, reader)
	if err != nil {
		return nil, "", err
	}

	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	if etag != "" {
		req.Header.Set("If-Match", etag)
	}

	if s.userAgent != "" {
		req.Header.Set("User-Agent", s.userAgent)
	}

	if s.token != nil {
		token, err := s.token()
		if err != nil {
			return nil, "", fmt.Errorf("sign token: %w", err)
		}

		req.Header.Set("Authorization", "Bearer "+token)
	}

	resp, err := s.http.Do(req)
	if err != nil {
		return nil, "", err
	}

	// Drain what the decoder leaves (the trailing newline) so the connection is reused
	// instead of paying for a new TLS handshake on every request.
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
	}()

	var envelope lxdapi.Response
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&envelope)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: bad answer (HTTP %d): %w", method, path, resp.StatusCode, err)
	}

	if envelope.Type == lxdapi.ErrorResponse {
		return nil, "", errorFromEnvelope(resp.StatusCode, &envelope)
	}

	return &envelope, resp.Header.Get("ETag"), nil
}

// queryStruct sends a request and decodes the metadata of the answer into target.
func (s *Server) queryStruct(method string, path string, body any, etag string, target any) (string, error) {
	return s.queryStructContext(context.Background(), method, path, body, etag, target)
}

func (s *Server) queryStructContext(ctx context.Context, method string, path string, body any, etag string, target any) (string, error) {
	resp, etag, err := s.QueryContext(ctx, method, path, body, etag)
	if err != nil {
		return "", err
	}

	if target == nil {
		return etag, nil
	}

	err = json.Unmarshal(resp.Metadata, target)
	if err != nil {
		return "", fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}

	return etag, nil
}

// names turns a list of URLs into the last path segment of each.
func names(urls []string) ([]string, error) {
	result := make([]string, 0, len(urls))
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, err
		}

		segments := strings.Split(u.EscapedPath(), "/")
		name, err := url.PathUnescape(segments[len(segments)-1])
		if err != nil {
			return nil, err
		}

		result = append(result, name)
	}

	return result, nil
}
