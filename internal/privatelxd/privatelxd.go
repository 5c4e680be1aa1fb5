// Package privatelxd runs a private LXD daemon: its own LXD_DIR, listening only on its own
// unix socket, a "dir" storage pool named "default" in the default profile, no network,
// and one tiny busybox image under the alias "busybox". The end-to-end tests use it
// (through test/lxdtest) and so does `make run` on a machine where no LXD answers, so that
// the README's tour launches real instances anywhere.
package privatelxd

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Image is the alias of the busybox image imported into every daemon.
// Its containers reach Running in well under a second, idle until stopped,
// and exit promptly on a clean `stop` (SIGPWR).
const Image = "busybox"

// Pool is the name of the "dir" storage pool used by the default profile.
const Pool = "default"

// LXD is one private LXD daemon.
type LXD struct {
	Dir    string // LXD_DIR: all of the daemon's state lives here
	Socket string // Dir + "/unix.socket"

	// Requested is the directory Options.Dir asked for. When containers could not reach
	// it (a checkout under a 0700 directory), it is a symlink to Dir, under RelocatedRoot,
	// and Relocated says why; otherwise it is Dir and Relocated is empty.
	Requested string
	Relocated string

	d *daemon
}

// Options says where a private LXD lives.
type Options struct {
	// Dir, when set, is a LXD_DIR kept across runs: Launch reuses what is there (pool,
	// profile, image and instances) and Stop shuts LXD down without removing it. Empty
	// means a fresh /tmp/lxdt-* directory that Stop removes (and that a later Launch sweeps
	// if its owner died without stopping it).
	Dir string
}

// Launch starts a private LXD daemon and initialises it (idempotently for a kept Dir):
// the "dir" pool in the default profile's root disk, and the busybox image. On error
// everything it started is stopped again.
func Launch(opts Options) (*LXD, error) {
	if opts.Dir != "" {
		return launchKept(opts.Dir)
	}

	return launch()
}

// Stop shuts the daemon down (`lxd shutdown`, then SIGTERM, then SIGKILL), kills any
// container process left behind and unmounts what LXD left mounted under its directory.
// A temporary directory is removed; a kept one stays for the next Launch.
func (l *LXD) Stop() error {
	return l.d.stop()
}

// Env returns the environment for lxd/lxc commands talking to this daemon. With client
// set, lxc's own configuration lives under Dir too, not in $HOME.
func (l *LXD) Env(client bool) []string {
	return l.d.env(client)
}

// Available reports whether a private LXD can be started here, and if not,
// why. It needs Linux, root, the `lxd` and `lxc` binaries on PATH (Debian:
// apt-get install lxd) and a statically linked busybox (Debian: apt-get
// install busybox-static) to build the container image from.
func Available() (reason string, ok bool) {
	if runtime.GOOS != "linux" {
		return "LXD needs Linux", false
	}
	if os.Geteuid() != 0 {
		return "starting a private LXD daemon needs root", false
	}
	for _, bin := range []string{"lxd", "lxc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Sprintf("%q binary not found on PATH (apt-get install lxd)", bin), false
		}
	}
	if _, err := findBusybox(); err != nil {
		return err.Error(), false
	}
	return "", true
}

// findBusybox returns the path of a statically linked busybox. A dynamic
// one would not run inside the otherwise empty image.
func findBusybox() (string, error) {
	candidates := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p, err := exec.LookPath("busybox"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	found := ""
	for _, p := range candidates {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
		found = p
	}
	if found != "" {
		return "", fmt.Errorf("busybox at %s is dynamically linked (apt-get install busybox-static)", found)
	}
	return "", fmt.Errorf("static busybox not found (apt-get install busybox-static)")
}

// Remove tears down whatever still runs out of a kept directory (a private LXD whose owner
// died, its containers, its mounts) and removes the directory.
// A directory relocated under RelocatedRoot goes too, with the link to it.
func Remove(dir string) error {
	if target, err := os.Readlink(dir); err == nil && filepath.Dir(target) == RelocatedRoot {
		err = (&daemon{dir: target}).stop()
		return errors.Join(err, os.Remove(dir))
	}
	return (&daemon{dir: dir}).stop()
}
