package registry

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Fetches stay where they were aimed: a registry answering with a redirect, or a URL that
// climbs out of a registry with "..", must not make the daemon fetch from another host or
// scheme (server-side request forgery through a registry).

// maxRedirects bounds a chain of redirects inside one registry.
const maxRedirects = 5

// confine returns a copy of client that follows redirects only to URLs under within (a
// registry's base URL, or for a plain URL its own scheme and host).
func confine(client *http.Client, within *url.URL) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}

	c := *client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}

		if !under(req.URL, within) {
			return fmt.Errorf("redirect to %s leaves %s: registries may redirect only within themselves", req.URL.Redacted(), within.Redacted())
		}

		return nil
	}

	return &c
}

// under says whether u is within base: same scheme and host, and a clean path under
// base's path.
func under(u *url.URL, base *url.URL) bool {
	if u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host) || u.User != nil {
		return false
	}

	if !cleanPath(u.Path) {
		return false
	}

	prefix := base.Path
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}

	return u.Path == base.Path || strings.HasPrefix(u.Path, prefix)
}

// cleanPath refuses "." and ".." segments (decoded: %2e%2e is ".." to the server too) and
// backslashes, which some servers read as separators.
func cleanPath(p string) bool {
	if strings.Contains(p, "\\") {
		return false
	}

	for _, part := range strings.Split(p, "/") {
		if part == "." || part == ".." {
			return false
		}
	}

	return true
}

// parseHTTPURL parses an http(s) URL and refuses ones with user info or unclean paths.
func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", raw)
	}

	if u.User != nil {
		return nil, errors.New("template URLs may not carry user info")
	}

	if !cleanPath(u.Path) {
		return nil, fmt.Errorf("template URL %s has \".\" or \"..\" segments: write the URL without them", u.Redacted())
	}

	return u, nil
}

// origin is the scheme and host of u, the bounds of a plain URL's redirects.
func origin(u *url.URL) *url.URL {
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}
}

// checkIndexFile refuses index entries that would defeat the limits: sizes must be real
// (a negative size would let a bundle past BundleBytes) and digests well formed.
func checkIndexFile(f IndexFile, limits Limits) error {
	if f.Size < 0 {
		return fmt.Errorf("file %q has a negative size (%d): regenerate the index", f.Path, f.Size)
	}

	if f.Size > limits.FileBytes {
		return fmt.Errorf("file %q (%d bytes) is over the %d-byte limit for one file", f.Path, f.Size, limits.FileBytes)
	}

	sum, err := hex.DecodeString(f.SHA256)
	if err != nil || len(sum) != 32 {
		return fmt.Errorf("file %q has no valid sha256", f.Path)
	}

	return nil
}
