// Package governor holds the transports a governor inside an instance uses: a unix socket
// per container, which LXD proxies into the container as /dev/lxd-deployd.sock, and vsock
// for VMs. Both are plain net.Listeners merged into one, in front of the same handler, and
// every connection is tagged with where it came from, so that the daemon knows which
// instance is calling without trusting anything the caller says.
package governor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Conn is a governor connection and what the transport tells about its origin.
type Conn struct {
	net.Conn

	// Instance and Project name the container whose socket the connection came through
	// (empty for vsock).
	Instance string
	Project  string

	// CID is the vsock context id of the calling VM (0 for unix sockets).
	CID uint32
}

// maxSocketPath is the longest path a unix socket may have (sun_path, less the NUL).
const maxSocketPath = 107

// Listener merges the per-instance sockets and the vsock listener into one net.Listener,
// so that a single http.Server serves them all.
type Listener struct {
	dir    string
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once

	mu   sync.Mutex
	subs map[string]net.Listener // socket path or "vsock" -> listener
}

// NewListener returns a listener whose per-instance sockets live in dir.
func NewListener(dir string) (*Listener, error) {
	err := os.MkdirAll(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("create governor socket directory: %w", err)
	}

	return &Listener{dir: dir, conns: make(chan net.Conn), closed: make(chan struct{}), subs: map[string]net.Listener{}}, nil
}

// SocketPath is the host path of an instance's governor socket.
func (l *Listener) SocketPath(project string, instance string) string {
	name := instance + ".sock"
	if project != "" && project != "default" {
		name = project + "_" + name
	}

	return filepath.Join(l.dir, name)
}

// AddInstance creates (or re-creates after a restart) the governor socket of a container
// and returns its host path. Only root may connect: LXD's proxy does, on the container's
// behalf.
func (l *Listener) AddInstance(project string, instance string) (string, error) {
	path := l.SocketPath(project, instance)
	if len(path) > maxSocketPath {
		return "", fmt.Errorf("governor socket path %s is longer than the %d bytes a unix socket allows: use a shorter --data-dir, project or instance name", path, maxSocketPath)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[path] != nil {
		return path, nil
	}

	_ = os.Remove(path)
	sub, err := net.Listen("unix", path)
	if err != nil {
		return "", fmt.Errorf("listen on governor socket %s: %w", path, err)
	}

	err = os.Chmod(path, 0o600)
	if err != nil {
		_ = sub.Close()
		return "", err
	}

	l.subs[path] = sub
	go l.accept(sub, func(c net.Conn) net.Conn { return &Conn{Conn: c, Instance: instance, Project: project} })
	return path, nil
}

// RemoveInstance closes and removes a container's governor socket.
func (l *Listener) RemoveInstance(project string, instance string) {
	path := l.SocketPath(project, instance)
	l.mu.Lock()
	sub := l.subs[path]
	delete(l.subs, path)
	l.mu.Unlock()
	if sub != nil {
		_ = sub.Close()
	}

	_ = os.Remove(path)
}

// Add merges another listener (vsock) whose connections are tagged by tag.
func (l *Listener) Add(name string, sub net.Listener, tag func(net.Conn) net.Conn) {
	l.mu.Lock()
	l.subs[name] = sub
	l.mu.Unlock()
	go l.accept(sub, tag)
}

// accept feeds a sub-listener's connections into Accept until it closes. Other errors
// (out of file descriptors, say) are waited out, as net/http does, rather than ending the
// socket for good.
func (l *Listener) accept(sub net.Listener, tag func(net.Conn) net.Conn) {
	delay := 5 * time.Millisecond
	for {
		c, err := sub.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}

		if err != nil {
			select {
			case <-l.closed:
				return
			case <-time.After(delay):
			}

			delay = min(2*delay, time.Second)
			continue
		}

		delay = 5 * time.Millisecond

		select {
		case l.conns <- tag(c):
		case <-l.closed:
			_ = c.Close()
			return
		}
	}
}

// Accept returns the next governor connection from any transport.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close closes every transport and removes the sockets.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.mu.Lock()
		defer l.mu.Unlock()
		for path, sub := range l.subs {
			_ = sub.Close()
			if filepath.IsAbs(path) {
				_ = os.Remove(path)
			}
		}
	})

	return nil
}

// Addr describes the listener.
func (l *Listener) Addr() net.Addr {
	return &net.UnixAddr{Name: l.dir, Net: "unix"}
}
