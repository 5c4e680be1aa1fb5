package test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDaemonFilesUnderALooseUmask starts the daemon with umask 000 (inherited from this
// process at fork) on a fresh directory and again on one whose modes were loosened: every
// file and socket ends with its own mode, and the data directory is 0711.
func TestDaemonFilesUnderALooseUmask(t *testing.T) {
	old := syscall.Umask(0)
	d := startDaemon(t, daemonOptions{})
	syscall.Umask(old)

	want := map[string]os.FileMode{
		".":           0o711,
		"unix.socket": 0o660,
		"server.crt":  0o644,
		"server.key":  0o600,
		"database":    0o700,
		"governor":    0o700,
	}

	check := func(when string) {
		t.Helper()
		for name, mode := range want {
			info, err := os.Stat(filepath.Join(d.DataDir, name))
			must(t, err)
			if info.Mode().Perm() != mode {
				t.Errorf("%s: %s has mode %o, want %o", when, name, info.Mode().Perm(), mode)
			}
		}

		// Nothing the daemon made is writable by others.
		_ = filepath.Walk(d.DataDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().Perm()&0o002 != 0 {
				t.Errorf("%s: %s is world-writable (%o)", when, p, info.Mode().Perm())
			}

			return nil
		})
	}

	check("fresh start")

	d.Stop(t)
	for name := range want {
		if name != "unix.socket" { // removed at stop
			must(t, os.Chmod(filepath.Join(d.DataDir, name), 0o777))
		}
	}

	old = syscall.Umask(0)
	d.Start(t)
	syscall.Umask(old)
	check("restart over loose modes")
}
