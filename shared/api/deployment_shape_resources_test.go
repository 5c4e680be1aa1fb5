package api

import (
	"encoding/json"
	"testing"
)

func TestResourceBoundsMerge(t *testing.T) {
	put := DeploymentShapePut{ResourceBounds: DeploymentShapeResourceBounds{LimitMemory: {Minimum: "64MiB", Maximum: "1GiB"}, LimitCPU: {Maximum: "2"}}}
	err := json.Unmarshal([]byte(`{"resource_bounds": {"limits.memory": {"maximum": "2GiB"}, "limits.cpu": null}}`), &put)
	if err != nil {
		t.Fatal(err)
	}

	if len(put.ResourceBounds) != 1 || put.ResourceBounds[LimitMemory] != (DeploymentShapeResourceBound{Minimum: "64MiB", Maximum: "2GiB"}) {
		t.Fatalf("got %+v", put.ResourceBounds)
	}

	err = json.Unmarshal([]byte(`{"resource_bounds": null}`), &put)
	if err != nil || put.ResourceBounds != nil {
		t.Fatalf("null: %+v %v", put.ResourceBounds, err)
	}
}
