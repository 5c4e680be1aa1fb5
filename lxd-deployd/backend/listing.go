package backend

import (
	"encoding/json"
	"fmt"
	"net/url"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// instanceStatus is what a listing of a shape's instances needs of each LXD instance.
type instanceStatus struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Location string `json:"location"`
}

// ListInstanceStatuses returns the name and status of every instance of a project, by name,
// from one recursion=1 listing of which only those two fields are decoded: a shape's
// listing then costs about what LXD's own does, not that plus decoding every instance's
// config, devices and expanded config (1.05 times LXD's listing in make bench, against
// 1.55 with the full decode). LXD 5.0's server-side filter= is not used: LXD renders every
// instance before filtering, and a filter naming a shape's 60 instances made the listing
// 4.5 times slower than LXD's own.
func ListInstanceStatuses(c lxd.InstanceServer, project string) (map[string]lxdapi.Instance, error) {
	query := url.Values{}
	query.Set("recursion", "1")
	query.Set("project", project)
	resp, _, err := c.RawQuery("GET", "/1.0/instances?"+query.Encode(), nil, "")
	if err != nil {
		return nil, err
	}

	var statuses []instanceStatus
	err = json.Unmarshal(resp.Metadata, &statuses)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's instance listing: %w", err)
	}

	byName := make(map[string]lxdapi.Instance, len(statuses))
	for _, s := range statuses {
		if s.Location == "none" {
			s.Location = "" // a standalone LXD's word for no member
		}

		byName[s.Name] = lxdapi.Instance{Name: s.Name, Status: s.Status, Location: s.Location}
	}

	return byName, nil
}
