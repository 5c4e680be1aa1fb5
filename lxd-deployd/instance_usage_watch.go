package main

import (
	"context"
	"time"
)

// usageRefreshEvery is how often run reads the usage of the projects listed lately: LXD's
// own metrics lifetime, so a listing shows an answer at most about two lifetimes old (and
// usageMaxAge at worst), while LXD builds its metrics for the daemon at most once a
// lifetime, as often as for one governor that lists its shape every few seconds.
const usageRefreshEvery = lxdMetricsLifetime

// usageWatchFor is how long after its last listing a project's usage is kept fresh: the
// background reads cost LXD a metrics build each (seconds of its CPU with hundreds of
// instances), so a project nobody lists is left alone (its next listing fetches as the
// first one did).
const usageWatchFor = 5 * time.Minute

// watch says a listing of the project came now: run keeps its usage fresh from here on.
func (c *usageCache) watch(project string) {
	if c == nil {
		return
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched[project] = c.now()
}

// watchedProjects are the projects listed within usageWatchFor; the others are forgotten.
func (c *usageCache) watchedProjects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for project, at := range c.watched {
		if c.now().Sub(at) >= usageWatchFor {
			delete(c.watched, project)
			continue
		}

		out = append(out, project)
	}

	return out
}

// run keeps the usage snapshot of every project listed lately fresh, off the request path
// (issue 34): a listing then reads the last answer (usageCache.last, which says when it was
// fetched) instead of asking LXD for its metrics, which made LXD read every instance's
// metrics beside the listing it was rendering (2.6 times LXD's own listing with 61
// instances). Reads go through get, so they share its one fetch in flight and reuse an
// answer LXD would still give.
// Nothing is read while online says LXD is away (the fetch would only fail).
func (c *usageCache) run(ctx context.Context, source metricsSource, online func() bool, every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}

		for _, project := range c.watchedProjects() {
			if ctx.Err() != nil || !online() {
				return
			}

			c.get(source, project)
		}
	}
}
