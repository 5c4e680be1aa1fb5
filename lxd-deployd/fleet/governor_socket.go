package fleet

import (
	lxdapi "github.com/canonical/lxd/shared/api"
)

const (
	// ConfigGovernorSocket is the shape config key that gives every instance of the shape
	// the governor socket.
	ConfigGovernorSocket = "governor.socket"

	// governorDevice is the name of the proxy device that carries the socket.
	governorDevice = "lxd-deployd-governor"

	// governorSocketInside is where the socket appears in the container.
	governorSocketInside = "/dev/lxd-deployd.sock"
)

// withGovernorSocket adds the proxy device that makes the host socket appear inside the
// container, when the shape asks for it.
func withGovernorSocket(req *lxdapi.InstancesPost, hostPath string) {
	devices := map[string]map[string]string{}
	for name, device := range req.Devices {
		devices[name] = device
	}

	devices[governorDevice] = map[string]string{
		"type":    "proxy",
		"bind":    "instance",
		"listen":  "unix:" + governorSocketInside,
		"connect": "unix:" + hostPath,
		"mode":    "0600",
	}

	req.Devices = devices
}
