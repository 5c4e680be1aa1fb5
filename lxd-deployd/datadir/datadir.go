// Package datadir lays out the daemon's data directory: the modes of what it keeps there
// (private to the daemon's user unless widened on purpose) and the server certificate.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/canonical/lxd/shared"
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

// Prepare sets the umask, creates or tightens the data directory, and is called before
// anything is created in it.
func Prepare(dir string) error {
	syscall.Umask(daemonUmask)
	err := os.MkdirAll(dir, dataDirMode)
	if err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}

	err = os.Chmod(dir, dataDirMode)
	if err != nil {
		return fmt.Errorf("set the mode of the data directory %s: %w", dir, err)
	}

	return FixModes(dir)
}

// FixModes gives the daemon's files in dir their modes, where they exist.
func FixModes(dir string) error {
	for name, mode := range fileModes {
		err := os.Chmod(filepath.Join(dir, name), mode)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set the mode of %s: %w", name, err)
		}
	}

	return nil
}

// ServerCertificate loads the server's key pair, generating an ECDSA P-384 one with the
// host's names as SANs on first start, as LXD does.
func ServerCertificate(dir string) (*shared.CertInfo, error) {
	certFile := filepath.Join(dir, "server.crt")
	keyFile := filepath.Join(dir, "server.key")
	err := shared.FindOrGenCert(certFile, keyFile, false, shared.CertOptions{AddHosts: true})
	if err != nil {
		return nil, fmt.Errorf("generate server certificate: %w", err)
	}

	return shared.KeyPairAndCA(dir, "server", shared.CertServer, shared.CertOptions{})
}
