package backend

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
)

// lxdProbeTimeout bounds how long one socket may take to answer before it counts as dead.
const lxdProbeTimeout = 3 * time.Second

// ChoosePrivate returns the socket of the LXD to use and, when it runs one, the private
// LXD: with privateDir set and no real LXD answering at the configured socket or the usual
// ones ($LXD_DIR, the snap's, the Debian package's), a private LXD in privateDir. A real
// LXD always wins: when one answers, the daemon uses it and says so. On a fresh Debian
// machine LXD is installed but neither started nor initialised, and the README's tour
// needs one that launches instances. Without privateDir the configured socket is used as
// given.
func ChoosePrivate(ctx context.Context, configured string, privateDir string, logger *slog.Logger) (string, *privatelxd.LXD, error) {
	if privateDir == "" {
		return configured, nil, nil
	}

	for _, socket := range lxdSockets(configured) {
		if lxdAnswers(ctx, socket) {
			if socket != configured {
				logger.Info("using the LXD that answers", "socket", socket, "configured", configured)
			}

			return socket, nil, nil
		}
	}

	reason, ok := privatelxd.Available()
	if !ok {
		logger.Warn("no LXD answers and a private one cannot run: the API works, launches answer 503", "reason", reason)
		return configured, nil, nil
	}

	private, err := privatelxd.Launch(privatelxd.Options{Dir: privateDir})
	var unreachable *privatelxd.UnreachableError
	if errors.As(err, &unreachable) {
		// An LXD whose every launch fails with "forkstart ... exit status 1" is worse than
		// none: refuse, saying why and what to do.
		return configured, nil, err
	}

	if err != nil {
		// The API still serves without LXD, and says why in GET /1.0.
		logger.Warn("no LXD answers and the private one did not start: the API works, launches answer 503", "dir", privateDir, "err", err)
		return configured, nil, nil
	}

	logger.Info("no LXD answers: running a private LXD (stopped on exit; --private-lxd= turns this off)", "lxd_dir", private.Dir, "socket", private.Socket, "image", privatelxd.Image)
	if private.Relocated != "" {
		logger.Info("the private LXD lives in "+private.Dir, "why", private.Relocated)
	}

	return private.Socket, private, nil
}

// DefaultSocket finds LXD the way its own tools do: $LXD_DIR, then the snap, then the
// Debian package's path.
func DefaultSocket() string {
	lxdDir := os.Getenv("LXD_DIR")
	if lxdDir != "" {
		return filepath.Join(lxdDir, "unix.socket")
	}

	snapSocket := "/var/snap/lxd/common/lxd/unix.socket"
	_, err := os.Stat(snapSocket)
	if err == nil {
		return snapSocket
	}

	return "/var/lib/lxd/unix.socket"
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
	return SocketAnswers(ctx, socket)
}
