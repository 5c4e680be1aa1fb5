package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"
)

// EventsArgs says which events GetEvents streams.
type EventsArgs struct {
	// Types of events: operation, lifecycle, endpoints, logging (admins only). Empty: operation and
	// lifecycle.
	Types []string

	// AllProjects streams every project's events instead of the connection's project.
	AllProjects bool
}

// GetEvents streams /1.0/events over a websocket, calling handle for each event, until ctx
// ends (nil is returned then) or the daemon closes the stream (an error says so).
func (s *Server) GetEvents(ctx context.Context, args EventsArgs, handle func(lxdapi.Event)) error {
	transport, ok := s.http.Transport.(*http.Transport)
	if !ok {
		return errors.New("events need an HTTP transport")
	}

	u, err := url.Parse(s.baseURL)
	if err != nil {
		return err
	}

	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path = "/1.0/events"
	query := url.Values{}
	if len(args.Types) > 0 {
		query.Set("type", strings.Join(args.Types, ","))
	}

	if args.AllProjects {
		query.Set("all-projects", "true")
	} else if s.project != "" {
		query.Set("project", s.project)
	}

	u.RawQuery = query.Encode()
	dialer := websocket.Dialer{
		NetDialContext:   transport.DialContext,
		TLSClientConfig:  transport.TLSClientConfig,
		HandshakeTimeout: 30 * time.Second,
	}

	header := http.Header{}
	if s.userAgent != "" {
		header.Set("User-Agent", s.userAgent)
	}

	if s.token != nil {
		token, err := s.token()
		if err != nil {
			return fmt.Errorf("sign token: %w", err)
		}

		header.Set("Authorization", "Bearer "+token)
	}

	conn, resp, err := dialer.DialContext(ctx, u.String(), header)
	if err != nil {
		// A refusal comes back as the usual envelope: report its message and status.
		if resp != nil {
			defer func() { _ = resp.Body.Close() }()
			var envelope lxdapi.Response
			if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&envelope) == nil && envelope.Error != "" {
				return lxdapi.NewStatusError(resp.StatusCode, envelope.Error)
			}
		}

		return fmt.Errorf("connect to the event stream: %w", err)
	}

	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	for {
		var event lxdapi.Event
		err = conn.ReadJSON(&event)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}

			return fmt.Errorf("the event stream ended: %w", err)
		}

		handle(event)
	}
}

// GetMetrics returns /1.0/metrics in the Prometheus text format, as a scraper sees it.
func (s *Server) GetMetrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL+"/1.0/metrics", nil)
	if err != nil {
		return "", err
	}

	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}

	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", err
	}

	if resp.StatusCode != http.StatusOK {
		var envelope lxdapi.Response
		if json.Unmarshal(body, &envelope) == nil && envelope.Error != "" {
			return "", lxdapi.NewStatusError(resp.StatusCode, envelope.Error)
		}

		return "", lxdapi.NewStatusError(resp.StatusCode, string(body))
	}

	return string(body), nil
}
