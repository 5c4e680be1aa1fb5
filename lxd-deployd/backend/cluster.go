package backend

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// The LXD cluster behind the socket (doc/placement.md): its members, their status and
// cluster groups. Every probe of LXD refreshes it, so every lxd-deployd member, connected
// to some member of the same LXD cluster, sees the same one.

// ClusterMember is an LXD cluster member as lxd-deployd uses it.
type ClusterMember struct {
	Name string

	// Status is LXD's: Online, Offline, Evacuated.
	Status string

	// Message is LXD's word on the status ("No heartbeat for 12s (...)").
	Message string

	// Groups are the cluster groups the member is in.
	Groups []string
}

// Online says whether the member takes instances and its instances can be reached.
func (m ClusterMember) Online() bool {
	return m.Status == "Online"
}

// ClusterView is what the last probe learnt of the LXD cluster.
type ClusterView struct {
	// Clustered is false for a standalone LXD: no members, no placement.
	Clustered bool

	// Local is the member lxd-deployd talks to.
	Local string

	// Stale is true when LXD reports the member lxd-deployd talks to as not online, which
	// it plainly is: LXD derives member status from heartbeats in its database, and while
	// its leader changes (a member rejoining, say) heartbeats pause and every member can
	// read as offline for a while. Then no member's offline status is believed.
	Stale bool

	// Members, sorted by name.
	Members []ClusterMember

	// Err says why the members could not be read, when they could not; Members is then
	// the last list read.
	Err error

	// At is when the view was read.
	At time.Time
}

// Member returns the named member, if LXD lists it.
func (v ClusterView) Member(name string) (ClusterMember, bool) {
	for _, m := range v.Members {
		if m.Name == name {
			return m, true
		}
	}

	return ClusterMember{}, false
}

// Groups returns every cluster group with its members, both sorted.
func (v ClusterView) Groups() map[string][]string {
	groups := map[string][]string{}
	for _, m := range v.Members {
		for _, g := range m.Groups {
			groups[g] = append(groups[g], m.Name)
		}
	}

	return groups
}

// clusterState holds the view between probes.
type clusterState struct {
	mu   sync.RWMutex
	view ClusterView
}

// ReadClusterMembers asks LXD for its cluster members. A standalone LXD answers with no
// members and no error.
func ReadClusterMembers(c lxd.InstanceServer) ([]ClusterMember, error) {
	resp, _, err := c.RawQuery("GET", "/1.0/cluster/members?recursion=1", nil, "")
	if err != nil {
		return nil, fmt.Errorf("read LXD cluster members: %w", err)
	}

	var raw []lxdapi.ClusterMember
	err = resp.MetadataAsStruct(&raw)
	if err != nil {
		return nil, fmt.Errorf("decode LXD cluster members: %w", err)
	}

	members := make([]ClusterMember, 0, len(raw))
	for _, m := range raw {
		groups := slices.Clone(m.Groups)
		sort.Strings(groups)
		members = append(members, ClusterMember{Name: m.ServerName, Status: m.Status, Message: m.Message, Groups: groups})
	}

	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	return members, nil
}

// refreshCluster updates the cluster view after a successful probe: clustered comes from
// the probe's GET /1.0. A failed read keeps the last members, with the error.
func (l *LXD) refreshCluster(client lxd.InstanceServer, clustered bool, local string) {
	view := ClusterView{Clustered: clustered, Local: local, At: time.Now()}
	if clustered {
		members, err := ReadClusterMembers(client)
		if err != nil {
			view.Err = err
			l.cluster.mu.RLock()
			view.Members = l.cluster.view.Members
			l.cluster.mu.RUnlock()
		} else {
			view.Members = members
		}

		self, ok := view.Member(local)
		view.Stale = ok && !self.Online()
	}

	l.cluster.mu.Lock()
	previous := l.cluster.view
	l.cluster.view = view
	l.cluster.mu.Unlock()
	for _, m := range view.Members {
		was, ok := previous.Member(m.Name)
		if ok && was.Status != m.Status {
			l.logger.Warn("LXD cluster member changed status", "member", m.Name, "from", was.Status, "to", m.Status, "message", m.Message, "stale", view.Stale)
		}
	}
}

// Cluster returns what the last probe learnt of the LXD cluster.
func (l *LXD) Cluster() ClusterView {
	l.cluster.mu.RLock()
	defer l.cluster.mu.RUnlock()
	return l.cluster.view
}

// RefreshCluster reads the cluster members now, rather than at the next probe: placement
// decisions that must not act on a stale view (a drain, a member reported lost) call it.
func (l *LXD) RefreshCluster() (ClusterView, error) {
	client, err := l.connected()
	if err != nil {
		return ClusterView{}, err
	}

	l.cluster.mu.RLock()
	clustered, local := l.cluster.view.Clustered, l.cluster.view.Local
	l.cluster.mu.RUnlock()
	l.refreshCluster(client, clustered, local)
	view := l.Cluster()
	return view, view.Err
}
