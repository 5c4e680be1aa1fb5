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
	Name   string `json:"name"`
	Status string `json:"status"`
}

// ListInstanceStatuses returns the name and status of every instance of a project, by name,
// from one recursion=1 listing of which only those two fields are decoded: a shape's
// listing then costs about what LXD's own does, not that plus decoding every instance's
// config, devices and expanded config (1.05 times LXD's listing in make bench, against
// 1.55 with the full decode). A filter= naming a shape's 60 instances one by one made the
// listing 4.5 times slower than LXD's own; ListShapeInstanceStatuses filters on two keys.
func ListInstanceStatuses(c lxd.InstanceServer, project string) (map[string]lxdapi.Instance, error) {
	return listStatuses(c, url.Values{"recursion": {"1"}, "project": {project}})
}

// listStatuses decodes the name and status of the instances of a recursion=1 listing.
func listStatuses(c lxd.InstanceServer, query url.Values) (map[string]lxdapi.Instance, error) {
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
		byName[s.Name] = lxdapi.Instance{Name: s.Name, Status: s.Status}
	}

	return byName, nil
}

// ListShapeInstanceStatuses is ListInstanceStatuses for the instances LXD holds as a
// shape's (its deployment and shape keys), by LXD's filter= on those two keys: a shape of
// 50 among 201 instances took 45 ms against 69 ms for the project (BenchmarkScale). The keys are set at create and never follow a
// rename: callers list the project for the instances this misses.
func ListShapeInstanceStatuses(c lxd.InstanceServer, project string, deployment string, shape string) (map[string]lxdapi.Instance, error) {
	filter := fmt.Sprintf("config.%s eq %s and config.%s eq %s", ConfigDeployment, deployment, ConfigShape, shape)
	return listStatuses(c, url.Values{"recursion": {"1"}, "project": {project}, "filter": {filter}})
}
