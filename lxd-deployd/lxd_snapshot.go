package main

import (
	"net/http"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
)

// lxdSnapshot is what LXD holds in the projects that have deployments, by project/name,
// from one listing per project: what reconcile and the warm pools observe before they plan.
type lxdSnapshot map[string]lxdapi.Instance

// snapshotKey is the key of an instance in an lxdSnapshot.
func snapshotKey(project string, name string) string {
	return project + "/" + name
}

// takeSnapshot lists the instances of every project; a project LXD does not have (yet) has
// none. Each listing is counted as an LXD call.
func takeSnapshot(client lxd.InstanceServer, projects []string, m *metrics.Metrics) (lxdSnapshot, error) {
	live := lxdSnapshot{}
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
			live[snapshotKey(project, name)] = instance
		}
	}

	return live, nil
}

// has says whether LXD holds an instance.
func (s lxdSnapshot) has(project string, name string) bool {
	_, ok := s[snapshotKey(project, name)]
	return ok
}
