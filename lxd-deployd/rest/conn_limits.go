package rest

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// HTTPS connection budgets (doc/security.md#connection-limits). Every connection is
// untrusted from its accept until a request on it authenticates as a trusted identity (a
// trusted certificate, or a browser session's cookie): the decision is made after the
// trust lookup, not on whether a certificate was shown, since anyone can make one. Trusted
// connections have their own budget, so that untrusted ones can never use it up. The
// daemon runs with DefaultConnBudgets; this package's tests set their own.
type ConnBudgets struct {
	// untrusted caps connections not (yet) from a trusted identity: they can only read GET
	// /1.0, sign in with a link and redeem trust tokens, so a few suffice.
	untrusted int

	// perSource caps the untrusted connections of one source (an IPv4 address, an IPv6
	// /64), so that one client cannot take the whole untrusted budget.
	perSource int

	// waiting is how many connections over the untrusted budget may wait for their first
	// request when no untrusted connection can make room: those that present a certificate
	// the trust store knows are let in then, the others are closed.
	waiting int

	// trusted caps connections of trusted identities and sessions.
	trusted int

	// untrustedIdle closes an untrusted keep-alive connection idle this long (trusted ones
	// keep the server's IdleTimeout).
	untrustedIdle time.Duration

	// grace is how long an untrusted connection may take to send a request before it may
	// be closed to make room for a new one.
	grace time.Duration
}

// DefaultConnBudgets are the daemon's: 128 + 16 + 256 connections at most, so that HTTPS
// clients cannot take the file descriptors dqlite, LXD calls and the unix socket need.
var DefaultConnBudgets = ConnBudgets{
	untrusted:     maxUnauthenticatedConns,
	perSource:     16,
	waiting:       16,
	trusted:       256,
	untrustedIdle: 5 * time.Second,
	grace:         2 * time.Second,
}

// connClass is which budget a connection counts in.
type connClass int

const (
	classUntrusted connClass = iota
	classWaiting
	classTrusted
)

// trackedConn is what the limits know of one connection.
type trackedConn struct {
	conn     net.Conn
	source   netip.Prefix
	class    connClass
	identity string // the trusted identity (classTrusted)

	state http.ConnState
	since time.Time // when the connection entered state

	// judged is set once the request in progress has been authenticated.
	judged bool

	// refused closes the connection once its answer is written.
	refused bool

	idle *time.Timer
}

// ConnLimits keeps the HTTPS connection budgets. It is the server's ConnState hook, and
// its authenticated wrapper tells it who each request turned out to be.
type ConnLimits struct {
	mu      sync.Mutex
	budgets ConnBudgets
	conns   map[net.Conn]*trackedConn
	counts  [3]int
	sources map[netip.Prefix]int // untrusted connections by source
	logger  *slog.Logger
	warned  time.Time // the last warning of a full budget: at most one a minute
}

// NewConnLimits returns the limits for the budgets, warning through logger (the default
// logger when nil).
func NewConnLimits(budgets ConnBudgets, logger *slog.Logger) *ConnLimits {
	if logger == nil {
		logger = slog.Default()
	}

	return &ConnLimits{budgets: budgets, conns: map[net.Conn]*trackedConn{}, sources: map[netip.Prefix]int{}, logger: logger}
}

// newConnLimits returns limits with the daemon's budgets but max untrusted connections.
func newConnLimits(max int) *ConnLimits {
	budgets := DefaultConnBudgets
	budgets.untrusted = max
	return NewConnLimits(budgets, nil)
}

// sourceOf groups a remote address: an IPv4 address alone, an IPv6 address by its /64
// (one host gets a whole /64).
func sourceOf(c net.Conn) netip.Prefix {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Prefix{}
	}

	addr := ap.Addr().Unmap().WithZone("")
	if addr.Is4() {
		return netip.PrefixFrom(addr, 32)
	}

	p, _ := addr.Prefix(64)
	return p
}

type connKey struct{}

// WithConn keeps the connection in its requests' context, for Authenticated (the server's
// ConnContext).
func (l *ConnLimits) WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnState is the server's ConnState hook.
func (l *ConnLimits) ConnState(c net.Conn, state http.ConnState) {
	var victims []net.Conn
	defer func() {
		for _, v := range victims {
			closeNow(v)
		}
	}()

	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if state == http.StateNew {
		tc := &trackedConn{conn: c, source: sourceOf(c), state: state, since: now}
		var fits bool
		victims, fits = l.makeRoom(tc, now)
		switch {
		case fits:
			tc.class = classUntrusted
		case l.counts[classWaiting] < l.budgets.waiting:
			tc.class = classWaiting
		default:
			// Over every budget: not even its handshake is served.
			victims = append(victims, c)
			return
		}

		l.conns[c] = tc
		l.add(tc, 1)
		return
	}

	tc, ok := l.conns[c]
	if !ok {
		return
	}

	if tc.idle != nil {
		tc.idle.Stop()
		tc.idle = nil
	}

	switch state {
	case http.StateActive:
		tc.state, tc.since, tc.judged = state, now, false
		if tc.class == classWaiting && !presentsCertificate(c) {
			// Over the cap, and nothing to look up in the trust store.
			l.forget(tc)
			victims = append(victims, c)
		}
	case http.StateIdle:
		tc.state, tc.since = state, now
		if tc.refused || tc.class == classWaiting {
			// Refused, or waiting and not judged trusted: it was never let in.
			l.forget(tc)
			victims = append(victims, c)
			return
		}

		if tc.class != classTrusted {
			tc.idle = time.AfterFunc(l.budgets.untrustedIdle, func() { l.closeIdle(c, now) })
		}
	case http.StateClosed, http.StateHijacked:
		// Streams (websockets) leave the budgets: each caller's are capped by the event
		// server (events.MaxListenersPerCaller).
		l.forget(tc)
	}
}

// closeIdle closes an untrusted connection still idle since the given time.
func (l *ConnLimits) closeIdle(c net.Conn, since time.Time) {
	l.mu.Lock()
	tc, ok := l.conns[c]
	if !ok || tc.state != http.StateIdle || !tc.since.Equal(since) || tc.class == classTrusted {
		l.mu.Unlock()
		return
	}

	l.forget(tc)
	l.mu.Unlock()
	closeNow(c)
}

// makeRoom says whether tc fits in the untrusted budget, closing (returning) the untrusted
// connection that makes room for it when needed.
func (l *ConnLimits) makeRoom(tc *trackedConn, now time.Time) ([]net.Conn, bool) {
	sameSource := l.sources[tc.source] >= l.budgets.perSource
	if !sameSource && l.counts[classUntrusted] < l.budgets.untrusted {
		return nil, true
	}

	l.warnFull(now, "untrusted", "source", tc.source.String(), "untrusted", l.counts[classUntrusted], "from_source", l.sources[tc.source])

	// Closing one of its own source's makes room in both budgets.
	v := l.victim(tc, now, sameSource)
	if v == nil {
		return nil, false
	}

	l.forget(v)
	return []net.Conn{v.conn}, true
}

// victim chooses the untrusted connection to close for tc: one idle, or one that has not
// finished sending a request within the grace period, of tc's own source when sameSource,
// else of the source holding the most; the oldest first. An untrusted request being
// answered is never cut.
func (l *ConnLimits) victim(tc *trackedConn, now time.Time, sameSource bool) *trackedConn {
	var best *trackedConn
	for _, o := range l.conns {
		if o == tc || o.class != classUntrusted || (sameSource && o.source != tc.source) {
			continue
		}

		evictable := o.state == http.StateIdle || (!o.judged && now.Sub(o.since) >= l.budgets.grace)
		if !evictable {
			continue
		}

		if best == nil || l.sources[o.source] > l.sources[best.source] || (l.sources[o.source] == l.sources[best.source] && o.since.Before(best.since)) {
			best = o
		}
	}

	return best
}

// trustedVictim chooses the idle trusted connection to close for a new trusted one: of the
// identity holding the most, the oldest first.
func (l *ConnLimits) trustedVictim(tc *trackedConn) *trackedConn {
	perIdentity := map[string]int{}
	for _, o := range l.conns {
		if o.class == classTrusted {
			perIdentity[o.identity]++
		}
	}

	var best *trackedConn
	for _, o := range l.conns {
		if o == tc || o.class != classTrusted || o.state != http.StateIdle {
			continue
		}

		if best == nil || perIdentity[o.identity] > perIdentity[best.identity] || (perIdentity[o.identity] == perIdentity[best.identity] && o.since.Before(best.since)) {
			best = o
		}
	}

	return best
}

// add counts tc in its class (by is 1 or -1).
func (l *ConnLimits) add(tc *trackedConn, by int) {
	l.counts[tc.class] += by
	if tc.class == classUntrusted {
		l.sources[tc.source] += by
		if l.sources[tc.source] <= 0 {
			delete(l.sources, tc.source)
		}
	}
}

// forget stops counting tc.
func (l *ConnLimits) forget(tc *trackedConn) {
	if l.conns[tc.conn] != tc {
		return
	}

	if tc.idle != nil {
		tc.idle.Stop()
	}

	l.add(tc, -1)
	delete(l.conns, tc.conn)
}

// judge moves the request's connection into the budget of the caller it authenticated as,
// and says whether it may be served.
func (l *ConnLimits) judge(ctx context.Context, caller *auth.Caller) error {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if c == nil {
		return nil // Not a connection these limits watch (the unix socket, tests).
	}

	var victims []net.Conn
	defer func() {
		for _, v := range victims {
			closeNow(v)
		}
	}()

	l.mu.Lock()
	defer l.mu.Unlock()
	tc, ok := l.conns[c]
	if !ok {
		return nil
	}

	tc.judged = true
	now := time.Now()
	if caller != nil && caller.Trusted {
		identity := caller.Fingerprint
		if identity == "" {
			identity = caller.String()
		}

		if tc.class == classTrusted {
			tc.identity = identity
			return nil
		}

		if l.counts[classTrusted] >= l.budgets.trusted {
			l.warnFull(now, "trusted", "trusted", l.counts[classTrusted])
			v := l.trustedVictim(tc)
			if v == nil {
				tc.refused = true
				return lxdapi.StatusErrorf(http.StatusServiceUnavailable, "the daemon serves %d connections of trusted clients already: retry later, or close idle connections", l.budgets.trusted)
			}

			victims = append(victims, v.conn)
			l.forget(v)
		}

		l.add(tc, -1)
		tc.class, tc.identity = classTrusted, identity
		l.add(tc, 1)
		return nil
	}

	if tc.class == classUntrusted {
		return nil
	}

	// A waiting connection that turned out untrusted, or a trusted one whose request is
	// not (a session's cookie expired): it needs room among the untrusted.
	l.add(tc, -1)
	var fits bool
	victims, fits = l.makeRoom(tc, now)
	if fits {
		tc.class = classUntrusted
		l.add(tc, 1)
		return nil
	}

	delete(l.conns, c)
	if tc.idle != nil {
		tc.idle.Stop()
	}

	victims = append(victims, c)
	return lxdapi.StatusErrorf(http.StatusServiceUnavailable, "too many connections without a trusted identity (at most %d, %d from one address): retry later", l.budgets.untrusted, l.budgets.perSource)
}

// Authenticated wraps the authenticator: each request's caller, once known, decides which
// budget its connection counts in.
func (l *ConnLimits) Authenticated(next Authenticator) Authenticator {
	return func(r *http.Request) (*auth.Caller, error) {
		caller, err := next(r)
		if err != nil {
			caller = nil
		}

		limitErr := l.judge(r.Context(), caller)
		if limitErr != nil {
			return nil, limitErr
		}

		return caller, err
	}
}

// warnFull tells the operator, at most once a minute, that a budget is full and
// connections are being closed or refused: a flood, or budgets too small for the clients.
func (l *ConnLimits) warnFull(now time.Time, budget string, args ...any) {
	if now.Sub(l.warned) < time.Minute {
		return
	}

	l.warned = now
	l.logger.Warn("HTTPS connection budget full: closing idle connections or refusing new ones (doc/security.md#connection-limits)", append([]any{"budget", budget}, args...)...)
}

// count is how many untrusted connections are open (tests).
func (l *ConnLimits) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[classUntrusted]
}

// presentsCertificate says whether the connection's client showed a certificate.
func presentsCertificate(c net.Conn) bool {
	tlsConn, ok := UnwrapConn(c).(*tls.Conn)
	return ok && len(tlsConn.ConnectionState().PeerCertificates) > 0
}

// closeNow closes the connection's socket at once: a TLS close would first try to send
// its closing alert, and could wait on a client that does not read.
func closeNow(c net.Conn) {
	tlsConn, ok := UnwrapConn(c).(*tls.Conn)
	if ok {
		_ = tlsConn.NetConn().Close()
		return
	}

	_ = c.Close()
}

// CheckFileLimit warns when the daemon's file limit is below what the budgets may hold
// plus what the daemon needs for itself.
func (l *ConnLimits) CheckFileLimit() {
	var limit syscall.Rlimit
	err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)
	if err != nil {
		return
	}

	const own = 256 // dqlite, LXD calls, listeners, governor sockets of a few instances
	need := uint64(l.budgets.untrusted+l.budgets.waiting+l.budgets.trusted) + own
	if limit.Cur < need {
		l.logger.Warn("the file limit is below what HTTPS connections may hold beside the daemon's own files: raise it (ulimit -n, LimitNOFILE)", "limit", limit.Cur, "want", need)
	}
}
