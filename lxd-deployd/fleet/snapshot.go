package fleet

import (
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
)

// Snapshot is what LXD holds in the projects that have deployments, by project/name,
// from one listing per Project: what reconcile and the warm pools observe before they plan.
type Snapshot map[string]lxdapi.Instance

// SnapshotKey is the key of an instance in an Snapshot.
func SnapshotKey(project string, name string) string {
	return project + "/" + name
}

// TakeSnapshot lists the instances of every project; a project LXD does not have (yet) has
// none. Each listing is counted as an LXD call.
func TakeSnapshot(client *backend.Conn, projects []string, m *metrics.Metrics) (Snapshot, error) {
	live := Snapshot{}
	for _, project := range projects {
		callStart := time.Now()
		instances, err := backend.ListInstances(client, project)
		m.LXDCall("list", time.Since(callStart), err)
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			continue
		}

		if err != nil {
			return nil, err
		}

		for name, instance := range instances {
			live[SnapshotKey(project, name)] = instance
		}
	}

	return live, nil
}

// has says whether LXD holds an instance.
func (s Snapshot) Has(project string, name string) bool {
	_, ok := s[SnapshotKey(project, name)]
	return ok
}
