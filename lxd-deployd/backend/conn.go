package backend

import (
	lxd "github.com/canonical/lxd/client"
)

// Conn is a connection to LXD as the daemon's engines hold it for a pass (a launch, a
// reconcile round, a rollout step): they hand it to this package's functions, and cannot
// reach LXD's raw client through it, so every call to LXD is made, and can be read, here
// (issue 34).
type Conn struct {
	c lxd.InstanceServer
}

// NewConn wraps an LXD client: for a connection made elsewhere (the private LXD a test
// starts) or a fake LXD in a test.
func NewConn(c lxd.InstanceServer) *Conn {
	return &Conn{c: c}
}

// Conn returns the connection of the moment, or a 503 error saying why LXD is
// unavailable.
func (l *LXD) Conn() (*Conn, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	return &Conn{c: c}, nil
}

// raw is the wrapped client (nil for a nil Conn, as a test of what is refused before LXD
// is asked passes).
func (c *Conn) raw() lxd.InstanceServer {
	if c == nil {
		return nil
	}

	return c.c
}
