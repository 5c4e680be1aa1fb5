package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestTrafficHold(t *testing.T) {
	n, d, err := TrafficHold(&api.DeploymentShapeTraffic{})
	if err != nil || n != 100 || d != 30*time.Second {
		t.Fatalf("defaults: %d %v %v", n, d, err)
	}

	n, d, err = TrafficHold(&api.DeploymentShapeTraffic{HoldMax: 5, HoldTimeout: "2s"})
	if err != nil || n != 5 || d != 2*time.Second {
		t.Fatalf("set: %d %v %v", n, d, err)
	}

	for _, c := range []struct {
		traffic api.DeploymentShapeTraffic
		err     string
	}{
		{api.DeploymentShapeTraffic{HoldMax: -1}, "traffic.hold_max -1"},
		{api.DeploymentShapeTraffic{HoldMax: 10001}, "traffic.hold_max 10001"},
		{api.DeploymentShapeTraffic{HoldTimeout: "500ms"}, "traffic.hold_timeout"},
		{api.DeploymentShapeTraffic{HoldTimeout: "51s"}, "traffic.hold_timeout"},
		{api.DeploymentShapeTraffic{HoldTimeout: "soon"}, "traffic.hold_timeout"},
	} {
		_, _, err := TrafficHold(&c.traffic)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: got %v, want %q", c.traffic, err, c.err)
		}

		c.traffic.Port, c.traffic.Listen = 80, "127.0.0.1:8080"
		if err := ShapeTraffic(&c.traffic); err == nil {
			t.Errorf("ShapeTraffic does not check the hold: %+v", c.traffic)
		}
	}
}
