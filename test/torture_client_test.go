package test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the torture operations call: every API answer goes through checkAnswer.

// opTimeout bounds the wait for one launch or delete.
const opTimeout = 90 * time.Second

// launch launches name in shape through the governor and waits for it.
func (tt *torture) launch(shape string, name string) error {
	op, err := tt.gov.CreateDeploymentShapeInstance("dep1", shape, name)
	tt.checkAnswer("launch "+name, err)
	if err != nil {
		return err
	}

	return tt.wait(op, "launch "+name)
}

// remove deletes name from shape through the governor and waits for it.
func (tt *torture) remove(shape string, name string) error {
	op, err := tt.gov.DeleteDeploymentShapeInstance("dep1", shape, name)
	tt.checkAnswer("delete "+name, err)
	if err != nil {
		return err
	}

	return tt.wait(op, "delete "+name)
}

// wait waits for an operation (an operation's own failure is no answer of the API).
func (tt *torture) wait(op *client.Operation, what string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := op.Wait(ctx)
	tt.checkAnswer("wait for "+what, err)
	return err
}

// records returns shape's instance records, sorted by name.
func (tt *torture) records(shape string) ([]api.DeploymentInstance, error) {
	instances, err := tt.admin.GetDeploymentShapeInstances("dep1", shape)
	tt.checkAnswer("GET "+shape+"'s instances", err)
	sort.Slice(instances, func(i, j int) bool { return instances[i].Name < instances[j].Name })
	return instances, err
}

// pick returns a random element of names, or "" when there is none.
func (tt *torture) pick(names []string) string {
	if len(names) == 0 {
		return ""
	}

	sort.Strings(names)
	return names[tt.rng.Intn(len(names))]
}

// createdNames returns the names of shape's records that are created and in no hook wait.
func (tt *torture) createdNames(shape string) ([]string, error) {
	instances, err := tt.records(shape)
	var names []string
	for _, i := range instances {
		if i.State == "created" && i.Lifecycle == "" {
			names = append(names, i.Name)
		}
	}

	return names, err
}

// changeShape applies one change to shape through PUT or PATCH and holds it to the revision
// invariant: an accepted change makes a new revision, at once, and that revision holds the
// marker's value (checked again at the end, in checkRevisions).
func (tt *torture) changeShape(shape string, how string, marker revisionMarker, change func(current api.DeploymentShape, etag string) error) string {
	before, etag, err := tt.admin.GetDeploymentShape("dep1", shape)
	tt.checkAnswer("GET shape "+shape, err)
	if err != nil {
		return describe(err)
	}

	err = change(*before, etag)
	tt.checkAnswer(how+" shape "+shape, err)
	if err != nil {
		return describe(err)
	}

	marker.shape, marker.how = shape, how
	tt.mu.Lock()
	tt.markers = append(tt.markers, marker)
	tt.mu.Unlock()
	after, _, err := tt.admin.GetDeploymentShape("dep1", shape)
	tt.checkAnswer("GET shape "+shape, err)
	if err != nil {
		return "accepted; " + describe(err)
	}

	if after.Revision <= before.Revision {
		tt.violate("every accepted change has its revision", "%s of shape %s setting %s=%s answered 200, but its revision stayed %d", how, shape, marker.field, marker.value, after.Revision)
	}

	return fmt.Sprintf("%s=%s accepted, revision %d -> %d", marker.field, marker.value, before.Revision, after.Revision)
}

// putTemplateValue changes user.v of shape's instance template through PUT, and the rollout
// settings when rollout is not nil.
func (tt *torture) putTemplateValue(shape string, value string, rollout *api.DeploymentShapeRollout) string {
	return tt.changeShape(shape, "PUT", revisionMarker{field: "user.v", value: value}, func(current api.DeploymentShape, etag string) error {
		put := current.Writable()
		config := map[string]string{}
		for k, v := range put.InstanceTemplate.Config {
			config[k] = v
		}

		config["user.v"] = value
		put.InstanceTemplate.Config = config
		if rollout != nil {
			put.Rollout = *rollout
		}

		return tt.admin.UpdateDeploymentShape("dep1", shape, put, etag)
	})
}

// patchShape sends a PATCH of shape with body.
func (tt *torture) patchShape(shape string, body any, etag string) error {
	_, _, err := tt.admin.Query(http.MethodPatch, "/1.0/deployments/dep1/shapes/"+shape, body, etag)
	return err
}

// markerValue reads a marker's field out of a revision's shape.
func markerValue(field string, shape api.DeploymentShapePut) string {
	switch field {
	case "user.v":
		return shape.InstanceTemplate.Config["user.v"]
	case "description":
		return shape.InstanceTemplate.Description
	}

	return ""
}

// checkRevisions checks, at the end, that every accepted change has a revision holding it.
func (tt *torture) checkRevisions() {
	byShape := map[string][]api.DeploymentShapeRevision{}
	for _, m := range tt.markers {
		revisions, ok := byShape[m.shape]
		if !ok {
			var err error
			revisions, err = tt.admin.GetDeploymentShapeRevisions("dep1", m.shape)
			tt.checkAnswer("GET revisions", err)
			if err != nil {
				tt.violate("every accepted change has its revision", "list revisions of %s: %v", m.shape, err)
				return
			}

			byShape[m.shape] = revisions
		}

		found := false
		for _, r := range revisions {
			found = found || markerValue(m.field, r.Shape) == m.value
		}

		if !found {
			tt.violate("every accepted change has its revision", "no revision of shape %s holds %s=%s, accepted by %s", m.shape, m.field, m.value, m.how)
		}
	}
}

// sicken makes an instance's health check fail from now on.
func (tt *torture) sicken(name string) error {
	return tt.lxdConn.CreateInstanceFile(name, "/sick", lxdInstanceFile([]byte("sick\n"), 0o644))
}

// isStatus reports whether err is an API answer with the HTTP status.
func isStatus(err error, status int) bool {
	code, ok := lxdapi.StatusErrorMatch(err)
	return ok && code == status
}
