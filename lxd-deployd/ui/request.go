package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// decodeBody reads a small JSON body strictly (the daemon's routes already cap its size).
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}

	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}

	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	err = decoder.Decode(v)
	if err != nil {
		return fmt.Errorf("invalid request body: %w", err)
	}

	return nil
}

// cookieResponse sets a cookie on another response.
type cookieResponse struct {
	cookie *http.Cookie
	inner  response.Response
}

func withCookie(c *http.Cookie, inner response.Response) response.Response {
	return cookieResponse{cookie: c, inner: inner}
}

func (c cookieResponse) Render(w http.ResponseWriter) error {
	http.SetCookie(w, c.cookie)
	w.Header().Set("Cache-Control", "no-store")
	return c.inner.Render(w)
}
