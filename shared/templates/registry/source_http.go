package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// HTTPSource is a registry served over HTTP(S) at Base, with the generated index.json at
// its root (see WriteIndex).
type HTTPSource struct {
	// Base URL of the registry root, e.g. "https://raw.githubusercontent.com/acme/templates/main/".
	Base string

	// Client makes the requests (default: a client with no redirects to other schemes).
	Client *http.Client

	Limits Limits

	mu    sync.Mutex
	index *Index
}

// errNotFound is a 404: the caller decides whether a missing file is an error.
var errNotFound = errors.New("not found")

// errNoIndex says that a registry serves no index.json.
var errNoIndex = errors.New("registry has no " + IndexFileName)

func (s *HTTPSource) base() string {
	if strings.HasSuffix(s.Base, "/") {
		return s.Base
	}

	return s.Base + "/"
}

// Index fetches (once) and returns the registry's index.
func (s *HTTPSource) Index(ctx context.Context) (*Index, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.index != nil {
		return s.index, nil
	}

	limits := s.Limits.withDefaults()
	client, err := s.confinedClient()
	if err != nil {
		return nil, err
	}

	data, err := httpGet(ctx, client, s.base()+IndexFileName, limits.BundleBytes, limits)
	if errors.Is(err, errNotFound) {
		return nil, errNoIndex // Read without one (source_listing.go).
	}

	if err != nil {
		return nil, err
	}

	idx := &Index{}
	err = json.Unmarshal(data, idx)
	if err != nil {
		// Never the parser's message: it quotes what the server sent.
		return nil, fmt.Errorf("registry %s: %s is not a valid index (JSON): regenerate it with \"lxd-deploy registry index DIR\"", s.Base, IndexFileName)
	}

	if idx.Format != IndexFormat {
		return nil, fmt.Errorf("registry %s: %s has format %d, this version reads format %d: regenerate the index", s.Base, IndexFileName, idx.Format, IndexFormat)
	}

	s.index = idx
	return idx, nil
}

// Versions implements Source.
func (s *HTTPSource) Versions(ctx context.Context, collection string, template string) ([]string, error) {
	idx, err := s.Index(ctx)
	if errors.Is(err, errNoIndex) {
		return s.listedVersions(ctx, collection, template)
	}

	if err != nil {
		return nil, err
	}

	t := idx.Find(collection, template)
	if t == nil {
		return nil, fmt.Errorf("template %s is not in registry %s (per its %s)", templateDir(collection, template), s.Base, IndexFileName)
	}

	versions := make([]string, 0, len(t.Versions))
	for _, v := range t.Versions {
		versions = append(versions, v.Version)
	}

	return versions, nil
}

// Files implements Source: it fetches the files the index lists and checks their digests.
func (s *HTTPSource) Files(ctx context.Context, collection string, template string, version string) (map[string][]byte, error) {
	idx, err := s.Index(ctx)
	if errors.Is(err, errNoIndex) {
		return s.listedFiles(ctx, collection, template, version)
	}

	if err != nil {
		return nil, err
	}

	t := idx.Find(collection, template)
	var entry *IndexVersion
	for i := 0; t != nil && i < len(t.Versions); i++ {
		if t.Versions[i].Version == version {
			entry = &t.Versions[i]
		}
	}

	if entry == nil {
		return nil, fmt.Errorf("template %s has no version %s in registry %s", templateDir(collection, template), version, s.Base)
	}

	limits := s.Limits.withDefaults()
	if len(entry.Files) > limits.Files {
		return nil, fmt.Errorf("template %s %s has %d files, over the limit of %d", templateDir(collection, template), version, len(entry.Files), limits.Files)
	}

	client, err := s.confinedClient()
	if err != nil {
		return nil, err
	}

	files := map[string][]byte{}
	declared := int64(0)
	for _, f := range entry.Files {
		err := checkRelative(f.Path)
		if err == nil {
			err = checkIndexFile(f, limits)
		}

		if err != nil {
			return nil, fmt.Errorf("registry %s: %s: %w", s.Base, IndexFileName, err)
		}

		declared += f.Size
		if declared > limits.BundleBytes {
			return nil, fmt.Errorf("template %s %s is over the %d-byte limit for one template and its files", templateDir(collection, template), version, limits.BundleBytes)
		}
	}

	total := int64(0)
	for _, f := range entry.Files {
		u := s.base() + templateDir(collection, template) + "/" + version + "/" + f.Path
		data, err := httpGet(ctx, client, u, min(f.Size, limits.FileBytes), limits)
		if err != nil {
			return nil, err
		}

		// What arrived counts, not what the index says.
		total += int64(len(data))
		if total > limits.BundleBytes {
			return nil, fmt.Errorf("template %s %s is over the %d-byte limit for one template and its files", templateDir(collection, template), version, limits.BundleBytes)
		}

		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, fmt.Errorf("%s does not match the digest in the registry's %s: regenerate the index after changing a template", u, IndexFileName)
		}

		files[f.Path] = data
	}

	return files, nil
}

// checkRelative refuses paths that would leave a version directory or a URL's directory.
func checkRelative(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "://") {
		return fmt.Errorf("file path %q must be relative to the template's directory", p)
	}

	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || part == "" {
			return fmt.Errorf("file path %q must stay inside the template's directory (no \"..\" or empty segments)", p)
		}
	}

	return nil
}

// httpGet fetches one URL with a timeout and a size cap.
func httpGet(ctx context.Context, client *http.Client, url string, maxBytes int64, limits Limits) ([]byte, error) {
	data, _, err := httpGetResponse(ctx, client, url, maxBytes, limits)
	return data, err
}

// httpGetResponse is httpGet that also returns the answer's header.
func httpGetResponse(ctx context.Context, client *http.Client, url string, maxBytes int64, limits Limits) ([]byte, http.Header, error) {
	if client == nil {
		client = http.DefaultClient
	}

	ctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}

	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch %s: %w", url, err)
	}

	defer func() { _ = resp.Body.Close() }()

	if resp.StatusCode == http.StatusNotFound {
		return nil, nil, fmt.Errorf("fetch %s: %w", url, errNotFound)
	}

	if resp.StatusCode != http.StatusOK {
		return nil, nil, &statusError{url: url, code: resp.StatusCode}
	}

	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch %s: %w", url, err)
	}

	if int64(len(data)) > maxBytes {
		return nil, nil, fmt.Errorf("fetch %s: larger than the %d-byte limit", url, maxBytes)
	}

	return data, resp.Header, nil
}

// confinedClient is the source's client with redirects kept inside the registry's scheme,
// host and path prefix: every fetch from a registry, indexed or not, goes through it.
func (s *HTTPSource) confinedClient() (*http.Client, error) {
	base, err := parseHTTPURL(s.base())
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", s.Base, err)
	}

	return confine(s.Client, base), nil
}
