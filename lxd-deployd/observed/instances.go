package observed

import (
	"context"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// listingTimeout bounds one listing of a project's instances: a frozen LXD answers
// nothing, and its readers must hear so (no verdict) rather than wait with it.
const listingTimeout = 10 * time.Second

// instanceListings holds the last listing of each project's instances with their state.
type instanceListings struct {
	mu       sync.Mutex
	projects map[string]*instanceListing
}

// instanceListing is one project's last listing: what LXD answered, or why it did not, and
// when the listing began.
type instanceListing struct {
	byName map[string]backend.Serving
	err    error
	at     time.Time

	// listing is closed when the listing in flight ends (nil: none).
	listing chan struct{}
}

// Serving returns a project's instances as LXD listed them (address, status, last use) at
// most maxAge ago: the last listing if it is young enough, else a new one, which readers
// that come meanwhile wait for (or for ctx), so that the checks of a thousand instances
// cost LXD one listing every maxAge. A listing that failed is remembered for maxAge as its
// error, never as a listing without instances: a reader must take it as nothing known of
// any instance (the health checker: no verdict).
func (s *Snapshot) Serving(ctx context.Context, project string, maxAge time.Duration) (map[string]backend.Serving, error) {
	l := &s.listings
	l.mu.Lock()
	if l.projects == nil {
		l.projects = map[string]*instanceListing{}
	}

	p := l.projects[project]
	if p == nil {
		p = &instanceListing{}
		l.projects[project] = p
	}

	for {
		if !p.at.IsZero() && s.now().Sub(p.at) <= maxAge {
			byName, err := p.byName, p.err
			l.mu.Unlock()
			return byName, err
		}

		if p.listing == nil {
			break
		}

		wait := p.listing
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}

		l.mu.Lock()
		if p.listing == nil && !p.at.IsZero() {
			// The listing waited for is the freshest there is, whatever maxAge.
			byName, err := p.byName, p.err
			l.mu.Unlock()
			return byName, err
		}
	}

	done := make(chan struct{})
	p.listing = done
	l.mu.Unlock()

	started := s.now()
	// Not the reader's context: the others waiting for this listing need it too.
	listCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listingTimeout)
	byName, err := s.list(listCtx, project)
	cancel()

	l.mu.Lock()
	defer l.mu.Unlock()
	defer close(done)
	p.listing = nil
	p.byName, p.err, p.at = byName, err, started
	return byName, err
}

// list lists a project's instances with their state over the connection of the moment.
func (s *Snapshot) list(ctx context.Context, project string) (map[string]backend.Serving, error) {
	client, err := s.lxd.Requests()
	if err != nil {
		return nil, err
	}

	return backend.ListInstanceServing(ctx, client, project)
}
