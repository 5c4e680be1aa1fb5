package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
)

// instanceNetwork is what a health check needs of an instance's state: its addresses.
type instanceNetwork struct {
	Name  string `json:"name"`
	State *struct {
		Network map[string]struct {
			Addresses []struct {
				Family  string `json:"family"`
				Address string `json:"address"`
				Scope   string `json:"scope"`
			} `json:"addresses"`
		} `json:"network"`
	} `json:"state"`
}

// ListInstanceAddresses returns an address of every running instance of a project that has
// one, by name, from one recursion=2 listing (LXD's state of all instances in one request,
// instead of one state request per instance): the first global IPv4 address of an
// interface other than lo, else the first global IPv6 one.
func ListInstanceAddresses(ctx context.Context, c DoHTTPer, project string) (map[string]netip.Addr, error) {
	resp, err := rawDo(ctx, c, "GET", "/1.0/instances", project, url.Values{"recursion": {"2"}}, nil)
	if err != nil {
		return nil, err
	}

	var listed []instanceNetwork
	err = json.Unmarshal(resp.Metadata, &listed)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's instance states: %w", err)
	}

	addresses := make(map[string]netip.Addr, len(listed))
	for _, i := range listed {
		if i.State == nil {
			continue
		}

		var v6 netip.Addr
		for name, nic := range i.State.Network {
			if name == "lo" {
				continue
			}

			for _, a := range nic.Addresses {
				addr, err := netip.ParseAddr(a.Address)
				if err != nil || a.Scope != "global" {
					continue
				}

				if addr.Is4() && !addresses[i.Name].IsValid() {
					addresses[i.Name] = addr
				} else if addr.Is6() && !v6.IsValid() {
					v6 = addr
				}
			}
		}

		if !addresses[i.Name].IsValid() && v6.IsValid() {
			addresses[i.Name] = v6
		}
	}

	return addresses, nil
}
