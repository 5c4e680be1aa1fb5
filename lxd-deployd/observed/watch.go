package observed

import (
	"context"
	"time"
)

// RefreshEvery is how often Run reads the usage of the projects listed lately: LXD's own
// metrics lifetime, so a listing shows an answer at most about two lifetimes old (and
// MaxAge at worst), while LXD builds its metrics for the daemon at most once a lifetime, as
// often as for one governor that lists its shape every few seconds.
const RefreshEvery = LXDMetricsLifetime

// watchFor is how long after its last listing a project's usage is kept fresh: the
// background reads cost LXD a metrics build each (seconds of its CPU with hundreds of
// instances), so a project nobody lists is left alone (its next listing fetches as the
// first one did).
const watchFor = 5 * time.Minute

// Watch says a listing of the project came now: Run keeps its usage fresh from here on.
func (s *Snapshot) Watch(project string) {
	if s == nil {
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched[project] = s.now()
}

// watchedProjects are the projects listed within watchFor; the others are forgotten.
func (s *Snapshot) watchedProjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for project, at := range s.watched {
		if s.now().Sub(at) >= watchFor {
			delete(s.watched, project)
			continue
		}

		out = append(out, project)
	}

	return out
}

// Run keeps the usage snapshot of every project listed lately fresh, off the request path
// (issue 34): a listing then reads the last answer (Last, which says when it was fetched)
// instead of asking LXD for its metrics, which made LXD read every instance's metrics
// beside the listing it was rendering (2.6 times LXD's own listing with 61 instances).
// Reads go through Get, so they share its one fetch in flight and reuse an answer LXD would
// still give. Nothing is read while LXD is away (the fetch would only fail).
func (s *Snapshot) Run(ctx context.Context, every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}

		for _, project := range s.watchedProjects() {
			if ctx.Err() != nil || !s.online() {
				break
			}

			_, _ = s.Get(project) // a failed read leaves no usage: listings go without
		}
	}
}
