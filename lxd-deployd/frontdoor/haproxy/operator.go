package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// Operator drives an operator's HAProxy through its admin socket (`stats socket PATH
// level admin`): it fills the backends the operator named with dynamic servers and
// writes no configuration. Its servers are named ld-<instance>; the operator's own
// servers in the same backends are left alone. Servers added at run time do not survive
// the operator reloading HAProxy; the daemon's next Apply adds them again.
type Operator struct {
	mu    sync.Mutex
	admin string
	log   *slog.Logger
	keyOf map[string]string // backend -> frontend key, from the last Apply
}

var (
	_ frontdoor.Door     = (*Operator)(nil)
	_ frontdoor.Follower = (*Operator)(nil)
)

// NewOperator drives the HAProxy whose admin socket is at adminSocket. It checks that the
// socket answers at admin level; it changes nothing until Apply.
func NewOperator(ctx context.Context, adminSocket string, log *slog.Logger) (*Operator, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Operator{admin: adminSocket, log: log, keyOf: map[string]string{}}
	// "show servers state" needs no privilege; a harmless admin-only command tells an
	// operator-level socket from an admin one before the first change fails.
	out, err := command(ctx, adminSocket, "show info")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(out, "Name: HAProxy") {
		return nil, fmt.Errorf("%s does not answer like a haproxy stats socket: give the path of `stats socket ... level admin`", adminSocket)
	}
	if out, err := command(ctx, adminSocket, "show servers state"); err != nil || strings.Contains(out, "Permission denied") {
		return nil, fmt.Errorf("haproxy socket %s refuses the runtime API: configure it with `level admin`", adminSocket)
	}
	return o, nil
}

// Apply implements frontdoor.Door: each frontend's Backend gets exactly its servers.
func (o *Operator) Apply(ctx context.Context, fs []frontdoor.Frontend) error {
	if err := validate(fs, false); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[string][]frontdoor.Server{}
	keyOf := map[string]string{}
	for _, f := range fs {
		if other, ok := keyOf[f.Backend]; ok {
			return fmt.Errorf("frontends %q and %q both fill backend %s: give each shape its own backend", other, f.Key, f.Backend)
		}
		keyOf[f.Backend] = f.Key
		want[f.Backend] = f.Servers
	}
	o.keyOf = keyOf
	err := reconcile(ctx, o.log, o.admin, want, nil)
	var ae *AnswerError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w (dynamic servers need balance roundrobin, leastconn, first or random in the operator's backend)", err)
	}
	return err
}

// Follow implements frontdoor.Follower: Stats reports these frontends' backends, which
// another member of the cluster fills (doc/traffic.md, "In a cluster of daemons").
func (o *Operator) Follow(_ context.Context, fs []frontdoor.Frontend) error {
	if err := validate(fs, false); err != nil {
		return err
	}
	keyOf := map[string]string{}
	for _, f := range fs {
		keyOf[f.Backend] = f.Key
	}
	o.mu.Lock()
	o.keyOf = keyOf
	o.mu.Unlock()
	return nil
}

// Stats implements frontdoor.Door, for the backends of the last Apply or Follow.
func (o *Operator) Stats(ctx context.Context) (map[string]frontdoor.FrontendStats, error) {
	o.mu.Lock()
	keyOf := o.keyOf
	o.mu.Unlock()
	return stats(ctx, o.admin, func(be string) (string, bool) {
		k, ok := keyOf[be]
		return k, ok
	})
}

// Close implements frontdoor.Door; the operator's HAProxy is not the daemon's to stop.
func (o *Operator) Close() error { return nil }
