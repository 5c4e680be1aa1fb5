package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Source is one registry: it lists a template's versions and reads a version's files.
type Source interface {
	// Versions lists the version directory names of a template.
	Versions(ctx context.Context, collection string, template string) ([]string, error)

	// Files reads the files of a template version, keyed by path relative to the version
	// directory.
	Files(ctx context.Context, collection string, template string, version string) (map[string][]byte, error)
}

// Limits bound what one fetch may read, so that a registry cannot make the CLI or the
// daemon read without end. Zero fields take the defaults below.
type Limits struct {
	// Timeout of each HTTP request (default 10 s).
	Timeout time.Duration

	// FileBytes caps one file (default 1 MiB).
	FileBytes int64

	// BundleBytes caps all the files of one template (default 8 MiB).
	BundleBytes int64

	// Files caps the number of files of one template (default 200).
	Files int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}

	if l.FileBytes <= 0 {
		l.FileBytes = 1 << 20
	}

	if l.BundleBytes <= 0 {
		l.BundleBytes = 8 << 20
	}

	if l.Files <= 0 {
		l.Files = 200
	}

	return l
}

// DirSource is a registry in a local directory. Reads go through os.Root, so neither ".."
// nor a symbolic link leads out of the directory.
type DirSource struct {
	Dir    string
	Limits Limits
}

// Versions implements Source.
func (s *DirSource) Versions(ctx context.Context, collection string, template string) ([]string, error) {
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("open registry directory: %w", err)
	}

	defer func() { _ = root.Close() }()

	entries, err := fs.ReadDir(root.FS(), templateDir(collection, template))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("template %s is not in registry %s", templateDir(collection, template), s.Dir)
	}

	if err != nil {
		return nil, err
	}

	versions := []string{}
	for _, e := range entries {
		if e.IsDir() && IsVersion(e.Name()) {
			versions = append(versions, e.Name())
		}
	}

	return versions, nil
}

// Files implements Source.
func (s *DirSource) Files(ctx context.Context, collection string, template string, version string) (map[string][]byte, error) {
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("open registry directory: %w", err)
	}

	defer func() { _ = root.Close() }()

	return readTree(root.FS(), path.Join(templateDir(collection, template), version), s.Limits.withDefaults())
}

// templateDir is where a template's versions are, relative to the registry root.
func templateDir(collection string, template string) string {
	if collection == "" {
		return template
	}

	return collection + "/" + template
}

// readTree reads every regular, non-hidden file under dir, keyed by path relative to dir.
func readTree(fsys fs.FS, dir string, limits Limits) (map[string][]byte, error) {
	files := map[string][]byte{}
	total := int64(0)
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}

		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}

			return nil
		}

		if !d.Type().IsRegular() {
			return nil
		}

		if len(files) >= limits.Files {
			return fmt.Errorf("%s has more than %d files: a template version directory holds one template and its helpers", dir, limits.Files)
		}

		info, err := d.Info()
		if err != nil {
			return err
		}

		if info.Size() > limits.FileBytes {
			return fmt.Errorf("%s is %d bytes, over the %d-byte limit for one template file", p, info.Size(), limits.FileBytes)
		}

		total += info.Size()
		if total > limits.BundleBytes {
			return fmt.Errorf("%s is over the %d-byte limit for one template and its files", dir, limits.BundleBytes)
		}

		content, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}

		files[strings.TrimPrefix(p, dir+"/")] = content
		return nil
	})
	if err != nil {
		return nil, err
	}

	return files, nil
}
