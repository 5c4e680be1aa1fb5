package rest

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// handlerPanics counts the handler panics since start, shown to admins in GET /1.0
// (environment.handler_panics). One counter for the process: a panic anywhere is a bug
// worth seeing, whichever listener served it.
var handlerPanics atomic.Uint64

// HandlerPanics returns how many handler panics were recovered since the daemon started.
func HandlerPanics() uint64 {
	return handlerPanics.Load()
}

// recoverHandler turns a handler panic into a logged, counted 500 in the LXD envelope. Go's
// server would recover it too, but log it only to the server's error log (at debug level)
// and drop the connection with no answer.
func recoverHandler(w http.ResponseWriter, r *http.Request, logger *slog.Logger) {
	v := recover()
	if v == nil {
		return
	}

	if v == http.ErrAbortHandler {
		panic(v) // Deliberate abort: the server handles it.
	}

	// The request's id (X-Request-Id) names it in the log and in the 500 answer, so that a
	// user can quote it and an admin can find the stack.
	id := requestIDOf(r)
	count := handlerPanics.Add(1)
	logger.Error("handler panic", "request_id", id, "method", r.Method, "url", r.URL.RequestURI(), "panic", fmt.Sprint(v), "panics", count, "stack", string(debug.Stack()))
	_ = response.InternalError(fmt.Errorf("internal error (request id %s): the daemon's log has the details; please report it", id)).Render(w)
}
