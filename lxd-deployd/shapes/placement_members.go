package shapes

import "github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"

// ClusterMembers is the LXD cluster of the last probe as the placement rules see it: none
// when LXD is not clustered (then nothing is placed, and nothing is unreachable). A stale
// view (LXD reports the member we talk to as offline: its heartbeats paused) counts every
// member online: believing it would make every instance unreachable at once.
func ClusterMembers(view backend.ClusterView) []Member {
	if !view.Clustered {
		return nil
	}

	members := make([]Member, 0, len(view.Members))
	for _, m := range view.Members {
		members = append(members, Member{Name: m.Name, Online: m.Online() || view.Stale, Groups: m.Groups})
	}

	return members
}
