package backend

import (
	"net/netip"
	"strings"
)

// instanceNetwork is what a health check needs of an instance: the NICs LXD attached to it
// and its addresses.
type instanceNetwork struct {
	Name string `json:"name"`
	Type string `json:"type"`

	// Config holds the volatile keys where LXD records the name and MAC address it gave a
	// NIC (volatile.<device>.name, volatile.<device>.hwaddr).
	Config          map[string]string            `json:"config"`
	ExpandedDevices map[string]map[string]string `json:"expanded_devices"`
	State           *struct {
		Network map[string]struct {
			Hwaddr    string `json:"hwaddr"`
			Addresses []struct {
				Family  string `json:"family"`
				Address string `json:"address"`
				Scope   string `json:"scope"`
			} `json:"addresses"`
		} `json:"network"`
	} `json:"state"`
}

// attached says whether an interface seen inside the instance is a NIC LXD attached, as
// LXD itself pairs them: by the interface's name in a container (the device's name key,
// or the one LXD generated into volatile.<device>.name), by MAC address in a VM (whose
// guest names its interfaces). Interfaces root inside the instance made itself (a veth,
// a dummy) are not, whatever addresses they carry.
func (i instanceNetwork) attached(name string, hwaddr string) bool {
	for device, config := range i.ExpandedDevices {
		if config["type"] != "nic" {
			continue
		}

		if i.Type == "virtual-machine" {
			mac := config["hwaddr"]
			if mac == "" {
				mac = i.Config["volatile."+device+".hwaddr"]
			}

			if mac != "" && strings.EqualFold(mac, hwaddr) {
				return true
			}

			continue
		}

		nicName := config["name"]
		if nicName == "" {
			nicName = i.Config["volatile."+device+".name"]
		}

		if nicName != "" && nicName == name {
			return true
		}
	}

	return false
}

// address picks the address an http or tcp check dials (and a front door sends to): the
// first global IPv4 address of a NIC LXD attached, else the first global IPv6 one (invalid:
// none). IPv4-mapped IPv6 addresses count as the IPv4 address they carry. Whether the
// address may be dialled at all is the probe's dialer's to judge (health/probe.go).
func (i instanceNetwork) address() netip.Addr {
	if i.State == nil {
		return netip.Addr{}
	}

	var v4, v6 netip.Addr
	for name, nic := range i.State.Network {
		if name == "lo" || !i.attached(name, nic.Hwaddr) {
			continue
		}

		for _, a := range nic.Addresses {
			addr, err := netip.ParseAddr(a.Address)
			if err != nil || a.Scope != "global" {
				continue
			}

			addr = addr.Unmap()
			if addr.Is4() && !v4.IsValid() {
				v4 = addr
			} else if addr.Is6() && !v6.IsValid() {
				v6 = addr
			}
		}
	}

	if v4.IsValid() {
		return v4
	}

	return v6
}
