package fleet

import (
	lxdapi "github.com/canonical/lxd/shared/api"
)

// WithGovernorSocket adds to an instance request the proxy device that makes a host
// governor socket appear inside the container at /dev/lxd-deployd.sock: the one
// definition of that device, also used for the deployers of custom rollouts.
func WithGovernorSocket(req *lxdapi.InstancesPost, hostPath string) {
	withGovernorSocket(req, hostPath)
}

// GovernorSocketInside is where the governor socket appears in a container.
const GovernorSocketInside = governorSocketInside
