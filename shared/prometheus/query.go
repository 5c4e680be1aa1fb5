// Package prometheus asks a Prometheus server for one number: an instant query through its
// HTTP API (GET /api/v1/query), with nothing but net/http, so that the reference governor
// stays a small static binary and any governor can reuse it.
package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxResponse bounds an answer: one number takes a few hundred bytes; a query that matches
// thousands of series is refused anyway.
const maxResponse = 4 << 20

// ErrNoData is returned (wrapped) when a query matched no series: nothing to decide from.
var ErrNoData = errors.New("no data")

// Client runs instant queries against one Prometheus server.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
}

// New returns a client of the Prometheus server at rawURL (http:// or https://, optionally
// with a path prefix such as /prometheus, and user:password@ for basic authentication).
// Each query may take up to timeout, which Prometheus is also told.
func New(rawURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is no Prometheus URL: want http://host:port or https://host:port, optionally with a path prefix (as in http://127.0.0.1:9090)", redact(rawURL))
	}

	if timeout <= 0 {
		return nil, fmt.Errorf("prometheus query timeout must be positive, got %s", timeout)
	}

	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, http: &http.Client{Timeout: timeout + 5*time.Second}, timeout: timeout}, nil
}

// String is the server's URL without its password, for logs.
func (c *Client) String() string {
	return c.base.Redacted()
}

// redact hides the password of a URL that may not parse.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	switch {
	case err == nil && u.User != nil:
		return u.Redacted()
	case strings.Contains(rawURL, "@"):
		// Perhaps a password where the parser did not see one ("user:pw@host:9090").
		return "(a URL with user information)"
	}

	return rawURL
}

// response is the envelope of Prometheus' HTTP API.
type response struct {
	Status    string   `json:"status"`
	Data      *data    `json:"data"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
}

type data struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

// Query runs an instant query and returns its value: a scalar, or an instant vector of one
// series. No series is ErrNoData; several series, a range vector or a string are errors,
// since a shape is scaled on one number (aggregate with sum(), max(), ...).
func (c *Client) Query(ctx context.Context, query string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	u := *c.base
	u.Path += "/api/v1/query"
	u.RawQuery = url.Values{"query": {query}, "timeout": {c.timeout.String()}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}

	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		// The error names the URL: redact its password.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			urlErr.URL = redact(urlErr.URL)
		}

		return 0, fmt.Errorf("prometheus %s: %w", c, err)
	}

	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, fmt.Errorf("prometheus %s: read the answer: %w", c, err)
	}

	if len(body) > maxResponse {
		return 0, fmt.Errorf("prometheus %s: the answer is over %d MiB: aggregate the query to one number, as in sum(...)", c, maxResponse>>20)
	}

	return decode(resp.StatusCode, body)
}

// decode reads the answer of an instant query.
func decode(status int, body []byte) (float64, error) {
	var r response
	err := json.Unmarshal(body, &r)
	if err != nil || (r.Status != "success" && r.Status != "error") {
		// Not Prometheus' API: a proxy's error page, a wrong URL.
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200] + "..."
		}

		return 0, fmt.Errorf("not an answer of Prometheus' API (HTTP %d: %q): check the Prometheus URL, or whether the server is starting or stopping", status, text)
	}

	if r.Status == "error" {
		hint := ""
		if r.ErrorType == "bad_data" {
			hint = ": fix the query"
		}

		return 0, fmt.Errorf("query refused (HTTP %d, %s): %s%s", status, r.ErrorType, r.Error, hint)
	}

	if r.Data == nil {
		return 0, errors.New("the answer has no data")
	}

	switch r.Data.ResultType {
	case "scalar":
		var point [2]any
		err := json.Unmarshal(r.Data.Result, &point)
		if err != nil {
			return 0, fmt.Errorf("scalar result: %w", err)
		}

		return value(point)
	case "vector":
		var samples []sample
		err := json.Unmarshal(r.Data.Result, &samples)
		if err != nil {
			return 0, fmt.Errorf("vector result: %w", err)
		}

		switch len(samples) {
		case 0:
			return 0, fmt.Errorf("%w: the query matched no series (check the metric name and labels, and that Prometheus scrapes it)", ErrNoData)
		case 1:
			return value(samples[0].Value)
		}

		names := make([]string, 0, 3)
		for _, s := range samples[:min(3, len(samples))] {
			names = append(names, labels(s.Metric))
		}

		return 0, fmt.Errorf("the query returned %d series (%s...), not one number: aggregate them, as in sum(...)", len(samples), strings.Join(names, ", "))
	}

	return 0, fmt.Errorf("the query returned a %s, not one number: use an instant vector of one series or a scalar, as in sum(rate(x[1m]))", r.Data.ResultType)
}

// value reads a [time, "value"] pair; Prometheus writes values as strings ("NaN", "+Inf").
func value(point [2]any) (float64, error) {
	text, ok := point[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", point[1])
	}

	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %q: %w", text, err)
	}

	if math.IsNaN(v) {
		// NaN is what 0/0 or an average over nothing gives: no data, not a load.
		return 0, fmt.Errorf("%w: the query returned NaN", ErrNoData)
	}

	return v, nil
}

// labels prints a series' labels as PromQL does, sorted.
func labels(metric map[string]string) string {
	keys := make([]string, 0, len(metric))
	for k := range metric {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, metric[k]))
	}

	return "{" + strings.Join(parts, ",") + "}"
}
