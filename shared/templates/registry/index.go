package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// IndexFileName is the index at the root of a registry. HTTP has no directory listing, so an
// HTTP registry serves this generated file to say which templates, versions and files it
// has, without relying on a host-specific API (GitHub's or anyone else's).
const IndexFileName = "index.json"

// IndexFormat is the version of the index file format written by BuildIndex.
const IndexFormat = 1

// Index lists the templates of a registry. Generate it with WriteIndex (the CLI's
// "lxd-deploy registry index DIR") and publish it with the registry.
type Index struct {
	// Format of this file
	// Example: 1
	Format int `json:"format"`

	// Templates of the registry, sorted by collection and name
	Templates []IndexTemplate `json:"templates"`
}

// IndexTemplate is one template of a registry and its versions.
type IndexTemplate struct {
	// Collection the template is in ("" for the registry's root collection)
	// Example: big-data
	Collection string `json:"collection,omitempty"`

	// Name of the template (its directory)
	// Example: web
	Name string `json:"name"`

	// Versions of the template, lowest first
	Versions []IndexVersion `json:"versions"`
}

// IndexVersion is one version directory of a template.
type IndexVersion struct {
	// Version directory name
	// Example: v1.0.2
	Version string `json:"version"`

	// Template file in the version directory
	// Example: web.py
	Template string `json:"template"`

	// Files of the version directory (template, schema, helpers), sorted by path
	Files []IndexFile `json:"files"`
}

// IndexFile is one file of a version directory.
type IndexFile struct {
	// Path relative to the version directory, with forward slashes
	// Example: helpers/common.py
	Path string `json:"path"`

	// Size in bytes
	Size int64 `json:"size"`

	// SHA-256 of the content, hex; fetchers check it
	SHA256 string `json:"sha256"`
}

// Find returns the template named name in collection, or nil.
func (idx *Index) Find(collection string, name string) *IndexTemplate {
	for i := range idx.Templates {
		t := &idx.Templates[i]
		if t.Collection == collection && t.Name == name {
			return t
		}
	}

	return nil
}

// BuildIndex walks a registry directory and lists its templates: a directory named like a
// version (v1, v1.0.2) holding a file named after its parent directory with a template
// extension is a template version; its parent is the template; a template directory is
// either at the root or inside one collection directory (seed 001: collections are top
// level). Hidden files and directories are skipped.
func BuildIndex(dir string) (*Index, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open registry directory: %w", err)
	}

	defer func() { _ = root.Close() }()

	fsys := root.FS()
	templates := map[[2]string]*IndexTemplate{}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}

			return nil
		}

		if !d.IsDir() || !IsVersion(d.Name()) {
			return nil
		}

		parts := strings.Split(p, "/")
		if len(parts) < 2 || len(parts) > 3 {
			return nil // A version directory must be <template>/<v> or <collection>/<template>/<v>.
		}

		name := parts[len(parts)-2]
		collection := ""
		if len(parts) == 3 {
			collection = parts[0]
		}

		version, err := indexVersion(fsys, p, name)
		if err != nil || version == nil {
			return err
		}

		key := [2]string{collection, name}
		t := templates[key]
		if t == nil {
			t = &IndexTemplate{Collection: collection, Name: name}
			templates[key] = t
		}

		t.Versions = append(t.Versions, *version)
		return fs.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("index registry %s: %w", dir, err)
	}

	idx := &Index{Format: IndexFormat, Templates: []IndexTemplate{}}
	for _, t := range templates {
		sortIndexVersions(t.Versions)
		idx.Templates = append(idx.Templates, *t)
	}

	sort.Slice(idx.Templates, func(i, j int) bool {
		a, b := idx.Templates[i], idx.Templates[j]
		if a.Collection != b.Collection {
			return a.Collection < b.Collection
		}

		return a.Name < b.Name
	})

	return idx, nil
}

// indexVersion lists a version directory, or returns nil when it holds no template file.
func indexVersion(fsys fs.FS, dir string, name string) (*IndexVersion, error) {
	files, err := readTree(fsys, dir, Limits{}.withDefaults())
	if err != nil {
		return nil, err
	}

	template := templateFile(name, files)
	if template == "" {
		return nil, nil
	}

	v := &IndexVersion{Version: path.Base(dir), Template: template, Files: []IndexFile{}}
	for p, content := range files {
		sum := sha256.Sum256(content)
		v.Files = append(v.Files, IndexFile{Path: p, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
	}

	sort.Slice(v.Files, func(i, j int) bool { return v.Files[i].Path < v.Files[j].Path })
	return v, nil
}

func sortIndexVersions(versions []IndexVersion) {
	names := make([]string, 0, len(versions))
	byName := map[string]IndexVersion{}
	for _, v := range versions {
		names = append(names, v.Version)
		byName[v.Version] = v
	}

	for i, name := range SortVersions(names) {
		versions[i] = byName[name]
	}
}

// templateFile finds the template file of a version directory: <name>.py, .jinja or .star.
func templateFile(name string, files map[string][]byte) string {
	for _, ext := range TemplateExtensions {
		_, ok := files[name+ext]
		if ok {
			return name + ext
		}
	}

	return ""
}

// WriteIndex builds the index of the registry in dir and writes it to dir/index.json.
func WriteIndex(dir string) (*Index, error) {
	idx, err := BuildIndex(dir)
	if err != nil {
		return nil, err
	}

	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}

	err = os.WriteFile(filepath.Join(dir, IndexFileName), append(data, '\n'), 0o644)
	if err != nil {
		return nil, fmt.Errorf("write registry index: %w", err)
	}

	return idx, nil
}
