package haproxy

import (
	"os"
	"strconv"
	"syscall"
)

// closeOnExec marks every open file descriptor above stderr close-on-exec, so that the
// HAProxy started next inherits none of them. Go opens everything close-on-exec; the C
// linked into the daemon does not: libdqlite makes the node's listening socket with a bare
// socket(2). A private HAProxy started without this held the daemon's database address
// (@lxd-deployd-...) for as long as it ran, and it outlives the daemon by design: a daemon
// killed with -9 could not start again beside its door ("failed to set bind address").
func closeOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}

	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}

		// A descriptor closed since the listing (the listing's own) is EBADF, ignored.
		syscall.CloseOnExec(fd)
	}
}
