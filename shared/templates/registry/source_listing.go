package registry

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Registries without an index. Deployment Manager's registries were plain Git repositories
// or HTTP directories laid out as <template>/<version>/<template>.<ext>[.schema], with no
// generated index. An HTTPSource whose index.json is missing reads them as they are:
//
//   - where the server lists directories (an HTML index page, as nginx's autoindex,
//     Apache's, Go's http.FileServer and python -m http.server make), versions and files
//     come from the listings, and a reference resolves to the highest patch as usual;
//   - where it cannot (raw Git hosting), a version directory named exactly as the
//     reference asks (web:v1 -> web/v1/) is read the way Deployment Manager read a template
//     URL: the template file, its schema, and the files the schema imports. Any other
//     version needs the index, and the error says how to generate it.

// errCannotList says that a registry has no index and its server does not list
// directories: only a version directory named as the reference asks can be read.
var errCannotList = errors.New("registry cannot list its directories")

// maxListingDepth bounds how deep a version directory's subdirectories are listed.
const maxListingDepth = 8

// listEntry is one entry of a directory listing.
type listEntry struct {
	name string
	dir  bool
}

// hrefPattern finds the links of an HTML directory listing.
var hrefPattern = regexp.MustCompile(`(?i)<a\s[^>]*?href\s*=\s*["']([^"'#]+)["']`)

// list reads the listing of directory dir (relative to the registry root, "" for the
// root). It returns errCannotList when the server answers with no HTML listing.
func (s *HTTPSource) list(ctx context.Context, dir string) ([]listEntry, error) {
	limits := s.Limits.withDefaults()
	u := s.base()
	if dir != "" {
		u += escapePath(dir) + "/"
	}

	client, err := s.confinedClient()
	if err != nil {
		return nil, err
	}

	data, header, err := httpGetResponse(ctx, client, u, limits.FileBytes, limits)
	var status *statusError
	if errors.Is(err, errNotFound) || (errors.As(err, &status) && status.code >= 400 && status.code < 500) {
		return nil, errCannotList
	}

	if err != nil {
		return nil, err
	}

	media, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if media != "text/html" {
		return nil, errCannotList
	}

	entries := []listEntry{}
	seen := map[string]bool{}
	for _, m := range hrefPattern.FindAllStringSubmatch(string(data), -1) {
		href := m[1]
		if strings.Contains(href, "?") || strings.Contains(href, "://") || strings.HasPrefix(href, "/") {
			continue // Sorting links, parent links by absolute path, other sites.
		}

		href = strings.TrimPrefix(href, "./")
		name, err := url.PathUnescape(strings.TrimSuffix(href, "/"))
		if err != nil || name == "" || name == "." || name == ".." || strings.Contains(name, "/") || strings.HasPrefix(name, ".") || seen[name] {
			continue
		}

		seen[name] = true
		entries = append(entries, listEntry{name: name, dir: strings.HasSuffix(href, "/")})
	}

	return entries, nil
}

// listedVersions lists a template's version directories when the registry has no index.
func (s *HTTPSource) listedVersions(ctx context.Context, collection string, template string) ([]string, error) {
	entries, err := s.list(ctx, templateDir(collection, template))
	if errors.Is(err, errCannotList) {
		// A server that lists its root but not this directory does not have the template.
		_, rootErr := s.list(ctx, "")
		if rootErr == nil {
			return nil, fmt.Errorf("template %s is not in registry %s", templateDir(collection, template), s.Base)
		}
	}

	if err != nil {
		return nil, err
	}

	versions := []string{}
	for _, e := range entries {
		if e.dir && IsVersion(e.name) {
			versions = append(versions, e.name)
		}
	}

	return versions, nil
}

// listedFiles reads a version directory when the registry has no index: every file its
// listings show, or, when the server cannot list, what Deployment Manager read.
func (s *HTTPSource) listedFiles(ctx context.Context, collection string, template string, version string) (map[string][]byte, error) {
	dir := templateDir(collection, template) + "/" + version
	limits := s.Limits.withDefaults()
	client, err := s.confinedClient()
	if err != nil {
		return nil, err
	}

	files := map[string][]byte{}
	total := int64(0)
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := s.list(ctx, path.Join(dir, rel))
		if err != nil {
			return err
		}

		for _, e := range entries {
			p := path.Join(rel, e.name)
			if e.dir {
				if depth >= maxListingDepth {
					return fmt.Errorf("%s/%s is more than %d directories deep", dir, p, maxListingDepth)
				}

				err = walk(p, depth+1)
				if err != nil {
					return err
				}

				continue
			}

			if len(files) >= limits.Files {
				return fmt.Errorf("%s has more than %d files: a template version directory holds one template and its helpers", dir, limits.Files)
			}

			data, err := httpGet(ctx, client, s.base()+escapePath(dir+"/"+p), limits.FileBytes, limits)
			if err != nil {
				return err
			}

			total += int64(len(data))
			if total > limits.BundleBytes {
				return fmt.Errorf("%s is over the %d-byte limit for one template and its files", dir, limits.BundleBytes)
			}

			files[p] = data
		}

		return nil
	}

	err = walk("", 0)
	if errors.Is(err, errCannotList) {
		return s.unlistedFiles(ctx, collection, template, version)
	}

	if err != nil {
		return nil, err
	}

	return files, nil
}

// unlistedFiles reads a version directory the server cannot list, as Deployment Manager
// read a template URL: <template>.<ext> (the first extension found), its .schema if there
// is one, and the files the schema imports.
func (s *HTTPSource) unlistedFiles(ctx context.Context, collection string, template string, version string) (map[string][]byte, error) {
	dir := s.base() + escapePath(templateDir(collection, template)+"/"+version) + "/"
	client, err := s.confinedClient()
	if err != nil {
		return nil, err
	}

	for _, ext := range TemplateExtensions {
		b, err := fetchDM(ctx, client, s.Limits.withDefaults(), dir+escapePath(template+ext))
		if errors.Is(err, errNotFound) {
			continue
		}

		if err != nil {
			return nil, err
		}

		return b.Files, nil
	}

	return nil, fmt.Errorf("registry %s has no %s and cannot list its directories, and %s has no %s.py, .jinja or .star: ask for a version that has a directory of that exact name, or generate the index with \"lxd-deploy registry index DIR\" and publish it at the registry root", s.Base, IndexFileName, dir, template)
}

// escapePath escapes each segment of a slash-separated path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		parts[i] = url.PathEscape(part)
	}

	return strings.Join(parts, "/")
}

// statusError is an HTTP answer other than 200 and 404.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("fetch %s: %d %s", e.url, e.code, http.StatusText(e.code))
}
