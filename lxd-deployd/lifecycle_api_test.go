package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// addCreatedInstance records a created instance of dep1/web, as a finished launch would.
func (a *testAPI) addCreatedInstance(name string) int64 {
	a.t.Helper()
	var id int64
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		shapeID, err := db.GetShapeID(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		id, err = db.CreateInstance(ctx, tx, "default", shapeID, name, "h", 1, "test", time.Now())
		if err != nil {
			return err
		}

		return db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "test", time.Now())
	})
	if err != nil {
		a.t.Fatal(err)
	}

	return id
}

func (a *testAPI) instanceRow(name string) db.Instance {
	a.t.Helper()
	var rows []db.Instance
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{Name: name})
		return err
	})
	if err != nil || len(rows) != 1 {
		a.t.Fatalf("instance %s: %v %v", name, rows, err)
	}

	return rows[0]
}

func TestShapeLifecycleFieldsAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	base := "/1.0/deployments/dep1/shapes/web"

	tests := []struct {
		body string
		want string
	}{
		{`{"health":{"command":[]}}`, "health.command"},
		{`{"health":{"command":["true"],"interval":"10"}}`, "health.interval"},
		{`{"health":{"command":["true"],"bogus":1}}`, "bogus"},
		{`{"hooks":{"default_action":"later"}}`, "hooks.default_action"},
		{`{"warm_pool":{"size":1,"state":"frozen"}}`, "warm_pool.state"},
	}

	for _, test := range tests {
		a.expect("PATCH", base, test.body, 400, test.want)
	}

	shape := a.expect("GET", base, "", 200, "")["metadata"].(map[string]any)
	if shape["health"] != nil || shape["hooks"] != nil || shape["warm_pool"] != nil {
		t.Fatalf("refused changes must change nothing: %v", shape)
	}

	a.expect("PATCH", base, `{"health":{"command":["true"],"replace":true},"hooks":{"terminate_timeout":"1m"},"warm_pool":{"size":2}}`, 200, "")
	shape = a.expect("GET", base, "", 200, "")["metadata"].(map[string]any)
	health, _ := shape["health"].(map[string]any)
	if health == nil || health["replace"] != true || shape["hooks"].(map[string]any)["terminate_timeout"] != "1m" || shape["warm_pool"].(map[string]any)["size"] != float64(2) {
		t.Fatalf("shape with lifecycle objects: %v", shape)
	}

	pool := a.expect("GET", base+"/warm-pool", "", 200, "")["metadata"].([]any)
	if len(pool) != 0 {
		t.Fatalf("no pool instance without LXD: %v", pool)
	}
}

func TestLifecycleHookAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "") // minimum 1
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"hooks":{"terminate_timeout":"1m"}}`, 200, "")
	a.addCreatedInstance("web1")
	a.addCreatedInstance("web2")
	instances := "/1.0/deployments/dep1/shapes/web/instances/"

	a.expect("POST", instances+"web1/lifecycle", `{"action":"continue"}`, 409, "waits in no lifecycle hook")
	a.expect("POST", instances+"web1/lifecycle", `{"action":"later"}`, 400, "continue, abandon or heartbeat")
	a.expect("POST", instances+"nope/lifecycle", `{"action":"continue"}`, 404, "")

	// A delete drains: the instance waits, still counted; a second delete of it, or of the
	// other instance (the minimum is 1), is refused.
	a.expect("DELETE", instances+"web1", "", 202, "")
	row := a.instanceRow("web1")
	if row.State != db.InstanceCreated || row.Hook.Hook != api.LifecycleTerminatingWait || row.Hook.Deadline == nil {
		t.Fatalf("draining instance: %+v", row)
	}

	a.expect("DELETE", instances+"web1", "", 409, "terminating:wait")
	a.expect("DELETE", instances+"web2", "", 409, "scaling minimum")
	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	if shape["scaling_current"] != float64(2) {
		t.Fatalf("a draining instance still counts: %v", shape["scaling_current"])
	}

	listed := a.expect("GET", instances[:len(instances)-1]+"?recursion=1", "", 200, "")["metadata"].([]any)
	for _, item := range listed {
		instance := item.(map[string]any)
		if instance["name"] == "web1" && (instance["lifecycle"] != api.LifecycleTerminatingWait || instance["lifecycle_deadline"] == nil) {
			t.Fatalf("the API shows the wait: %v", instance)
		}
	}

	before := *row.Hook.Deadline
	time.Sleep(10 * time.Millisecond)
	a.expect("POST", instances+"web1/lifecycle", `{"action":"heartbeat"}`, 200, "")
	if after := *a.instanceRow("web1").Hook.Deadline; !after.After(before) {
		t.Fatalf("a heartbeat extends the deadline: %s then %s", before, after)
	}

	a.expect("POST", instances+"web1/lifecycle", `{"action":"continue"}`, 200, "")
	if a.instanceRow("web1").Hook.Action != api.LifecycleActionContinue {
		t.Fatal("continue is recorded for the hook keeper")
	}

	a.expect("POST", instances+"web1/lifecycle", `{"action":"abandon"}`, 409, "already ending")
}
