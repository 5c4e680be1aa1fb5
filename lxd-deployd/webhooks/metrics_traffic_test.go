package webhooks

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A metrics event carries the front door's figures for a shape and its instances, and none
// for a shape the door does not know.
func TestMetricsEventCarriesTraffic(t *testing.T) {
	c := (&Collector{previous: map[string]timedSample{}}).WithTraffic(func() map[string]frontdoor.FrontendStats {
		return map[string]frontdoor.FrontendStats{"default/shop/web": {RequestRate: 200, Sessions: 4, ResponseTime: 3 * time.Millisecond,
			Servers: map[string]frontdoor.ServerStats{"web1": {RequestRate: 120, Sessions: 3, Queue: 1}}}}
	})
	d := db.Deployment{Deployment: api.Deployment{DeploymentPost: api.DeploymentPost{Name: "shop"}, DeploymentShapes: map[string]api.DeploymentShape{
		"web": {ScalingCurrent: 1}, "db": {ScalingCurrent: 1},
	}}}
	d.Project = "default"
	rows := []db.Instance{
		{Project: "default", Shape: "web", Name: "web1", State: db.InstanceCreated},
		{Project: "default", Shape: "db", Name: "db1", State: db.InstanceCreated},
	}

	got := c.metadata(d, rows, map[string]Sample{})
	web := got.Shapes["web"]
	if web.Traffic == nil || web.Traffic.RequestRate != 200 || web.Traffic.Sessions != 4 || web.Traffic.ResponseTimeSeconds != 0.003 {
		t.Fatalf("shape traffic: %+v", web.Traffic)
	}

	if i := web.Instances["web1"].Traffic; i == nil || i.RequestRate != 120 || i.Sessions != 3 || i.Queue != 1 {
		t.Fatalf("instance traffic: %+v", i)
	}

	if got.Shapes["db"].Traffic != nil || got.Shapes["db"].Instances["db1"].Traffic != nil {
		t.Fatalf("a shape without a door has traffic: %+v", got.Shapes["db"])
	}
}
