package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// daemonUmask makes every file, directory and socket the daemon creates private to its
// user unless the code widens it on purpose. With the umask the daemon inherits (000 in the
// red team's test) a socket is world-connectable between Listen and Chmod, and a
// certificate world-writable; with this one there is no window to close.
const daemonUmask = 0o077

// dataDirMode lets others traverse the data directory (LXD's mode for its own) but not
// list or change it.
const dataDirMode = 0o711

// fileModes are the modes of the daemon's own files, set explicitly at every start so that
// files from an older version, or written under a loose umask, are tightened too.
var fileModes = map[string]os.FileMode{
	"server.crt":  0o644,
	"server.key":  0o600,
	"cluster.crt": 0o644,
	"cluster.key": 0o600,
	"database":    0o700,
	"governor":    0o700,
}

// prepareDataDir sets the umask, creates or tightens the data directory, and is called
// before anything is created in it.
func prepareDataDir(dir string) error {
	syscall.Umask(daemonUmask)
	err := os.MkdirAll(dir, dataDirMode)
	if err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}

	err = os.Chmod(dir, dataDirMode)
	if err != nil {
		return fmt.Errorf("set the mode of the data directory %s: %w", dir, err)
	}

	return fixFileModes(dir)
}

// fixFileModes gives the daemon's files in dir their modes, where they exist.
func fixFileModes(dir string) error {
	for name, mode := range fileModes {
		err := os.Chmod(filepath.Join(dir, name), mode)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set the mode of %s: %w", name, err)
		}
	}

	return nil
}
