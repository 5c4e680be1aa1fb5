package rest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// RequestIDHeader carries a request's id both ways: a client (or a proxy in front) may send
// one to correlate its own logs; otherwise the daemon makes one. Either way the response
// says which id the daemon's log lines carry.
const RequestIDHeader = "X-Request-Id"

// maxRequestID bounds an id taken from a client, so logs cannot be flooded through it.
const maxRequestID = 128

// requestInfo is what the daemon knows about a request as it goes: filled in by serve
// (route, caller) and read by Observe once the response is written.
type requestInfo struct {
	id     string
	route  string
	logger *slog.Logger
}

type requestInfoKey struct{}

// Observe wraps an API listener's router: it gives every request an id and a logger that
// carries it, and records the request's route, status and latency in the metrics.
func Observe(next http.Handler, logger *slog.Logger, m *metrics.Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)

		// Paths that match no route are counted together: the raw path would let any
		// client mint label values.
		info := &requestInfo{id: id, route: "unmatched", logger: logger.With("request_id", id)}
		rec := &statusRecorder{ResponseWriter: w}
		method := metrics.Method(r.Method)
		if method == metrics.MethodOther {
			// Refused before routing, authentication or logging see it: a method is any
			// token the client likes, of any length.
			_ = response.ErrorResponse(http.StatusNotImplemented, fmt.Sprintf("method %.32q is not implemented: use GET, POST, PUT, PATCH or DELETE", r.Method)).Render(rec)
		} else {
			next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		}

		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}

		took := time.Since(start)
		m.APIRequest(info.route, method, status, took)
		info.logger.Debug("request", "method", method, "url", r.URL.RequestURI(), "status", status, "duration", took)
	})
}

// requestID returns the client's id when it is short and plain (letters, digits, - _ . :),
// a new random one otherwise.
func requestID(given string) string {
	if given != "" && len(given) <= maxRequestID {
		ok := true
		for _, c := range given {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
				ok = false
				break
			}
		}

		if ok {
			return given
		}
	}

	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// requestIDOf returns the id Observe gave the request, or a new one for a request that did
// not pass through Observe (handler tests).
func requestIDOf(r *http.Request) string {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return requestID("")
	}

	return info.id
}

// requestStarted tells the request's observer which route matched and who is calling, so
// that every later log line of the request names both.
func requestStarted(r *http.Request, route string, caller *auth.Caller) {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return
	}

	info.route = route
	if caller != nil {
		info.logger = info.logger.With("caller", caller.String())
	}
}

// requestLogger returns the logger of the request ctx belongs to (with its id and caller),
// or the default logger outside a request.
func requestLogger(ctx context.Context) *slog.Logger {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return slog.Default()
	}

	return info.logger
}

// RequestLoggerIfAny returns the request's logger, or nil outside a request (for
// operations.Args.Logger, which then falls back to the manager's).
func RequestLoggerIfAny(ctx context.Context) *slog.Logger {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return nil
	}

	return info.logger
}

// statusRecorder remembers the status a handler wrote. It passes hijacking through, so
// websockets (/1.0/events, operation waits) keep working behind it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}

	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}

	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	flusher, ok := s.ResponseWriter.(http.Flusher)
	if ok {
		flusher.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hijacker, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}

	s.status = http.StatusSwitchingProtocols
	return hijacker.Hijack()
}
