package doorkeeper

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/haproxy"
)

// Front door modes (--front-door, doc/traffic.md).
const (
	// DoorNone drives no load balancer: endpoints are served on the API and /1.0/events for
	// one of the operator's to follow, and a drain lasts its timeout.
	DoorNone = "none"
	// DoorPrivate runs and supervises a private HAProxy of the daemon's own, in
	// <data-dir>/frontdoor (the default).
	DoorPrivate = "private"
	// DoorHAProxy drives an operator's HAProxy through its admin socket (--haproxy-socket).
	DoorHAProxy = "haproxy"
)

// Interval is how often the keeper looks at the endpoints when nothing pokes it: a delete
// pokes it, health verdicts and LXD's addresses are picked up within this.
const Interval = time.Second

// OpenDoor returns the door a mode names, nil for none: a private HAProxy kept in
// <dataDir>/frontdoor, or the operator's behind haproxySocket. The door is opened (a
// private HAProxy started or adopted, an operator's socket checked) at the first picture
// that names a shape, not now (frontdoor.Lazy).
func OpenDoor(mode string, dataDir string, haproxySocket string, logger *slog.Logger) (frontdoor.Door, error) {
	switch mode {
	case "", DoorNone:
		return nil, nil
	case DoorPrivate:
		dir := filepath.Join(dataDir, "frontdoor")
		return &frontdoor.Lazy{Open: func(ctx context.Context) (frontdoor.Door, error) {
			return haproxy.NewPrivate(ctx, haproxy.PrivateConfig{Dir: dir, Logger: logger})
		}}, nil
	case DoorHAProxy:
		if haproxySocket == "" {
			return nil, fmt.Errorf("--front-door haproxy needs the admin socket of the operator's HAProxy: set --haproxy-socket")
		}

		return &frontdoor.Lazy{Open: func(ctx context.Context) (frontdoor.Door, error) {
			return haproxy.NewOperator(ctx, haproxySocket, logger)
		}}, nil
	default:
		return nil, fmt.Errorf("--front-door %q is not a mode: use private, haproxy or none", mode)
	}
}
