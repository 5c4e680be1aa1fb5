// Package ui serves the web view (doc/ui.md): static files embedded in the daemon, and the
// sign-in that a browser without a client certificate needs. The pages read everything
// else from the REST API and /1.0/events, as any client does.
package ui

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy lets the pages load only the daemon's own scripts, styles and
// images and talk only to the daemon (fetch and the events websocket): no inline script,
// no eval, no other site, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Asset answers GET /ui/{path}: the file, or index.html for the root.
func (a API) Asset(r *http.Request) response.Response {
	name := mux.Vars(r)["path"]
	if name == "" {
		name = "index.html"
	}

	clean := path.Clean("/" + name)[1:]
	contentType, ok := contentTypes[path.Ext(clean)]
	if !ok || clean != name || strings.Contains(name, "..") {
		return response.NotFound(errors.New("no such file in the web view"))
	}

	content, err := fs.ReadFile(assets, "assets/"+clean)
	if err != nil {
		return response.NotFound(errors.New("no such file in the web view"))
	}

	return assetResponse{content: content, contentType: contentType}
}

// Redirect answers GET /ui with the web view's root.
func (a API) Redirect(r *http.Request) response.Response {
	return redirectResponse{location: "/ui/"}
}

type assetResponse struct {
	content     []byte
	contentType string
}

func (a assetResponse) Render(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	// The files change with the daemon binary; revalidating is cheap next to stale code.
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(a.content)
	return err
}

type redirectResponse struct {
	location string
}

func (r redirectResponse) Render(w http.ResponseWriter) error {
	w.Header().Set("Location", r.location)
	w.WriteHeader(http.StatusMovedPermanently)
	return nil
}
