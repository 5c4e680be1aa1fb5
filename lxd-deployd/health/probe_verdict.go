package health

import (
	"errors"
	"syscall"
)

// errNoListing: LXD's listing of the instances' addresses failed, so an http or tcp check
// could not even be aimed.
var errNoListing = errors.New("cannot list instance addresses")

// classifyDial sorts an http or tcp check's failure to connect: refused is the instance's
// (nothing listens: CannotStart, which on every instance makes the check broken); the
// daemon's own shortage of files or buffers is no verdict on the instance; anything else
// (a timeout, a reset) is a failed check.
func classifyDial(r Result, err error) Result {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		r.CannotStart = true
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.ENOBUFS), errors.Is(err, syscall.ENOMEM):
		r.NoVerdict = true
		r.Output = truncate("check did not run: the daemon could not open a connection: " + err.Error())
	}

	return r
}
