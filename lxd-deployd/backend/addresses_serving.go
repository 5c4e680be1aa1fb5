package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Serving is what a front door needs of an instance from LXD: its address (as a health
// check finds it), whether it runs, and since when.
type Serving struct {
	// Address is invalid while the instance has none.
	Address    netip.Addr
	StatusCode lxdapi.StatusCode
	LastUsedAt time.Time
}

// instanceServing is one entry of a recursion=2 listing, with the status beside the
// network state.
type instanceServing struct {
	instanceNetwork
	StatusCode lxdapi.StatusCode `json:"status_code"`
	LastUsedAt time.Time         `json:"last_used_at"`
}

// ListInstanceServing returns every instance of a project with its address and status, by
// name, from one recursion=2 listing (LXD's state of all instances in one request, instead
// of one state request per instance); the address is instanceNetwork.address's pick.
func ListInstanceServing(ctx context.Context, c DoHTTPer, project string) (map[string]Serving, error) {
	resp, err := rawDo(ctx, c, "GET", "/1.0/instances", project, url.Values{"recursion": {"2"}}, nil)
	if err != nil {
		return nil, err
	}

	var listed []instanceServing
	err = json.Unmarshal(resp.Metadata, &listed)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's instance states: %w", err)
	}

	serving := make(map[string]Serving, len(listed))
	for _, i := range listed {
		serving[i.Name] = Serving{Address: i.address(), StatusCode: i.StatusCode, LastUsedAt: i.LastUsedAt}
	}

	return serving, nil
}
