package policy

import "github.com/lxd-deployd/lxd-deployd/shared/api"

// spreadPick takes n instances from candidates, given in order of preference, so that each
// comes from the LXD cluster member that holds the most of those left: a scale-in keeps a
// shape spread over its members (doc/placement.md) where Kubernetes and Nomad let their
// spread decay. The preference decides within a member (and alone outside a cluster, where
// every instance's location is empty). Unreachable instances (their member is offline) come
// last: LXD cannot delete them until it returns.
func spreadPick(candidates []api.DeploymentInstance, n int) []api.DeploymentInstance {
	left := map[string]int{}
	for _, c := range candidates {
		if c.Status != api.InstanceStatusUnreachable {
			left[c.Location]++
		}
	}

	taken := make([]bool, len(candidates))
	picked := make([]api.DeploymentInstance, 0, n)
	for len(picked) < n {
		best := -1
		for i, c := range candidates {
			if taken[i] || c.Status == api.InstanceStatusUnreachable {
				continue
			}

			if best < 0 || left[c.Location] > left[candidates[best].Location] {
				best = i
			}
		}

		if best < 0 {
			break
		}

		taken[best] = true
		left[candidates[best].Location]--
		picked = append(picked, candidates[best])
	}

	for i, c := range candidates {
		if len(picked) == n {
			break
		}

		if !taken[i] {
			picked = append(picked, c)
		}
	}

	return picked
}
