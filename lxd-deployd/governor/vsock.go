package governor

import (
	"fmt"
	"net"

	"github.com/mdlayher/vsock"
)

// ListenVsock adds a vsock listener on port: a governor in an LXD VM dials the host (CID 2)
// and is identified by its own context id.
func (l *Listener) ListenVsock(port uint32) error {
	sub, err := vsock.Listen(port, nil)
	if err != nil {
		return fmt.Errorf("listen on vsock port %d: %w", port, err)
	}

	l.Add("vsock", sub, func(c net.Conn) net.Conn {
		conn := &Conn{Conn: c}
		addr, ok := c.RemoteAddr().(*vsock.Addr)
		if ok {
			conn.CID = addr.ContextID
		}

		return conn
	})

	return nil
}
