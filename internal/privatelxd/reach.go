package privatelxd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RelocatedRoot holds the private LXDs whose requested directory the containers cannot
// reach, one directory per requested path. Like /var/lib/lxd (mode 0711), it and its
// parents let anyone traverse them, and nobody but root list or change them.
const RelocatedRoot = "/var/lib/lxd-deployd-private-lxd"

// UnreachableError says that containers of a private LXD in the requested directory could
// not start, and what to do about it. The daemon refuses to start on it rather than run an
// LXD whose every launch fails.
type UnreachableError struct {
	msg string
}

func (e *UnreachableError) Error() string {
	return e.msg
}

func unreachablef(format string, a ...any) error {
	return &UnreachableError{msg: fmt.Sprintf(format, a...)}
}

// closedAncestor returns the first directory on the path to dir (dir's existing part,
// from / down) that others may not traverse, with its mode; "" when every one lets them.
// A container's root is an unprivileged uid on the host (1000000 by default), neither the
// owner nor in the group of these directories: only their "others" x bit lets LXD's
// `forkstart` reach the container's rootfs under LXD_DIR. A checkout in root's home (mode
// 0700) or under `mktemp -d` (0700) fails every start with "forkstart ... exit status 1".
func closedAncestor(dir string) (string, os.FileMode, error) {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return "", 0, fmt.Errorf("%s is not an absolute path", dir)
	}

	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	path := "/"
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			path = filepath.Join(path, parts[i])
		}

		info, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			// What does not exist yet is created traversable (launchKept's chmod, the
			// data directory's 0711).
			return "", 0, nil
		}

		if err != nil {
			return "", 0, err
		}

		if info.IsDir() && info.Mode().Perm()&0o001 == 0 {
			return path, info.Mode().Perm(), nil
		}
	}

	return "", 0, nil
}

// relocatedDir is where the private LXD asked for at dir lives when containers cannot
// reach dir: a name derived from dir's absolute path, so that every checkout keeps its
// own LXD across runs, short enough for the unix socket's 108 bytes.
func relocatedDir(root string, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(root, hex.EncodeToString(sum[:8]))
}

// placeKept decides where the kept private LXD asked for at dir (absolute) lives. When
// containers can reach dir, there. Otherwise in relocatedDir(root, dir) (root is
// RelocatedRoot but in tests), with dir a symlink to
// it, so that `LXD_DIR=dir lxc list` and the socket under dir keep working for the user;
// LXD itself gets the real path, since the kernel resolving a path through the symlink
// would cross the closed directory again. It returns the directory LXD runs in and, when
// that is not dir, why.
func placeKept(dir string, root string) (string, string, error) {
	// A previous run relocated it already.
	if target, err := os.Readlink(dir); err == nil && filepath.Dir(target) == root {
		return target, fmt.Sprintf("%s is a link to it: containers cannot traverse a directory above %s", dir, dir), nil
	}

	closed, mode, err := closedAncestor(dir)
	if err != nil {
		return "", "", fmt.Errorf("check that containers can reach %s: %w", dir, err)
	}

	if closed == "" {
		return dir, "", nil
	}

	why := fmt.Sprintf("%s is a link to it: containers' unprivileged root cannot traverse %s (mode %04o) to reach their root file system under %s", dir, closed, mode, dir)
	real := relocatedDir(root, dir)
	empty, err := emptyOrMissing(dir)
	if err != nil {
		return "", "", err
	}

	if !empty {
		return "", "", unreachablef("the private LXD in %s cannot start containers: their unprivileged root cannot traverse %s (mode %04o). Remove %s (make clean) and lxd-deployd keeps its private LXD in %s instead, linked from %s; or choose a --private-lxd directory whose parents others may traverse (mode 0711 or 0755)",
			dir, closed, mode, dir, real, dir)
	}

	err = makeTraversable(root)
	if err != nil {
		return "", "", err
	}

	// /var/lib itself, or a parent of it, may be closed on this machine: then nothing helps.
	closedReal, modeReal, err := closedAncestor(root)
	if err != nil {
		return "", "", err
	}

	if closedReal != "" {
		return "", "", unreachablef("a private LXD cannot run containers here: their unprivileged root can traverse neither %s (mode %04o) nor %s (mode %04o): let others traverse one of them (chmod o+x) or run lxd-deployd against an installed LXD (lxd init, then --lxd-socket)",
			closed, mode, closedReal, modeReal)
	}

	err = os.MkdirAll(real, 0o711)
	if err != nil {
		return "", "", err
	}

	_ = os.Remove(dir)
	err = os.MkdirAll(filepath.Dir(dir), 0o711)
	if err != nil {
		return "", "", err
	}

	err = os.Symlink(real, dir)
	if err != nil {
		return "", "", fmt.Errorf("link %s to the private LXD in %s: %w", dir, real, err)
	}

	return real, why, nil
}

// emptyOrMissing reports whether dir does not exist or is an empty directory.
func emptyOrMissing(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}

	if err != nil {
		return false, err
	}

	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}

	return false, err
}

// makeTraversable creates dir with mode 0711 (and its missing parents with 0755, as
// /var/lib has), and sets 0711 on dir if it exists with another mode.
func makeTraversable(dir string) error {
	err := os.MkdirAll(filepath.Dir(dir), 0o755)
	if err != nil {
		return err
	}

	err = os.Mkdir(dir, 0o711)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}

	return os.Chmod(dir, 0o711)
}
