package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// lxdProbeTimeout bounds how long one socket may take to answer before it counts as dead.
const lxdProbeTimeout = 3 * time.Second

// choosePrivateLXD runs a private LXD when --private-lxd names a directory and no real LXD
// answers at the configured socket or the usual ones ($LXD_DIR, the snap's, the Debian
// package's). A real LXD always wins: when one answers, the daemon uses it and says so.
// On a fresh Debian machine LXD is installed but neither started nor initialised, and the
// README's tour needs one that launches instances.
func (o *opened) choosePrivateLXD(ctx context.Context, logger *slog.Logger) error {
	if o.config.privateLXD == "" {
		return nil
	}

	for _, socket := range lxdSockets(o.config.lxdSocket) {
		if lxdAnswers(ctx, socket) {
			if socket != o.config.lxdSocket {
				logger.Info("using the LXD that answers", "socket", socket, "configured", o.config.lxdSocket)
				o.config.lxdSocket = socket
			}

			return nil
		}
	}

	reason, ok := privatelxd.Available()
	if !ok {
		logger.Warn("no LXD answers and a private one cannot run: the API works, launches answer 503", "reason", reason)
		return nil
	}

	private, err := privatelxd.Launch(privatelxd.Options{Dir: o.config.privateLXD})
	var unreachable *privatelxd.UnreachableError
	if errors.As(err, &unreachable) {
		// An LXD whose every launch fails with "forkstart ... exit status 1" is worse than
		// none: refuse, saying why and what to do.
		return err
	}

	if err != nil {
		// The API still serves without LXD, and says why in GET /1.0.
		logger.Warn("no LXD answers and the private one did not start: the API works, launches answer 503", "dir", o.config.privateLXD, "err", err)
		return nil
	}

	o.privateLXD = private
	o.config.lxdSocket = private.Socket
	logger.Info("no LXD answers: running a private LXD (stopped on exit; --private-lxd= turns this off)", "lxd_dir", private.Dir, "socket", private.Socket, "image", privatelxd.Image)
	if private.Relocated != "" {
		logger.Info("the private LXD lives in "+private.Dir, "why", private.Relocated)
	}
	return nil
}

// stopPrivateLXD shuts the private LXD down, keeping its directory for the next run.
func (o *opened) stopPrivateLXD() error {
	if o.privateLXD == nil {
		return nil
	}

	err := o.privateLXD.Stop()
	o.privateLXD = nil
	return err
}

// lxdSockets lists the sockets to try, the configured one first, without repeats.
func lxdSockets(configured string) []string {
	candidates := []string{configured}
	if dir := os.Getenv("LXD_DIR"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "unix.socket"))
	}

	candidates = append(candidates, "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket")
	seen := map[string]bool{}
	sockets := []string{}
	for _, s := range candidates {
		if !seen[s] {
			seen[s] = true
			sockets = append(sockets, s)
		}
	}

	return sockets
}

// lxdAnswers reports whether an LXD answers GET /1.0 on the socket in time.
func lxdAnswers(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, lxdProbeTimeout)
	defer cancel()
	return backend.SocketAnswers(ctx, socket)
}
