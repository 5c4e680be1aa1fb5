package haproxy

import (
	"syscall"
	"testing"
)

// TestCloseOnExec: a socket made as libdqlite makes its listener (socket(2) without
// SOCK_CLOEXEC) is close-on-exec after closeOnExec, so HAProxy does not inherit it.
func TestCloseOnExec(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = syscall.Close(fd) }()
	if cloexec(t, fd) {
		t.Fatal("a bare socket(2) is already close-on-exec: the test shows nothing")
	}

	closeOnExec()
	if !cloexec(t, fd) {
		t.Fatal("the socket is still inherited by a process started next")
	}
}

func cloexec(t *testing.T, fd int) bool {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		t.Fatal(errno)
	}

	return flags&syscall.FD_CLOEXEC != 0
}
