package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// DoHTTPer is the one method of an LXD client the raw requests use (an lxd.InstanceServer,
// or a fake in tests).
type DoHTTPer interface {
	DoHTTP(req *http.Request) (*http.Response, error)
}

// rawBase is any host: the daemon reaches LXD over its unix socket, whose transport
// ignores it.
const rawBase = "http://lxd"

// rawDo sends one request to LXD with ctx and decodes the envelope. The client's
// RawQuery takes no context, and its GetOperationWait rewrites the shared transport's
// timeout under concurrent calls.
func rawDo(ctx context.Context, c DoHTTPer, method string, p string, project string, query url.Values, body any) (*lxdapi.Response, error) {
	if query == nil {
		query = url.Values{}
	}

	if project != "" && project != "default" {
		query.Set("project", project)
	}

	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}

		reader = strings.NewReader(string(data))
	}

	u := rawBase + p
	if len(query) > 0 {
		u += "?" + query.Encode()
	}

	req, err := http.NewRequestWithContext(ctx, method, u, reader)
	if err != nil {
		return nil, err
	}

	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	httpResp, err := c.DoHTTP(req)
	if err != nil {
		return nil, err
	}

	defer httpResp.Body.Close()
	var resp lxdapi.Response
	err = json.NewDecoder(io.LimitReader(httpResp.Body, 1<<20)).Decode(&resp)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's answer to %s %s: %w", method, p, err)
	}

	if resp.Type == lxdapi.ErrorResponse {
		return nil, lxdapi.StatusErrorf(resp.Code, "%s", resp.Error)
	}

	return &resp, nil
}

// rawGetText reads at most limit bytes of a file LXD serves as is (an exec output log).
func rawGetText(ctx context.Context, c DoHTTPer, p string, project string, limit int) (string, error) {
	if limit <= 0 {
		return "", nil
	}

	u := rawBase + p
	if project != "" && project != "default" {
		u += "?project=" + url.QueryEscape(project)
	}

	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return "", err
	}

	resp, err := c.DoHTTP(req)
	if err != nil {
		return "", err
	}

	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("LXD answered %s for %s", resp.Status, p)
	}

	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)))
	// The rest is drained so that the connection can be kept alive.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return string(data), err
}
