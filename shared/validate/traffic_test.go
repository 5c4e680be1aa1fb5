package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestShapeTraffic(t *testing.T) {
	cases := []struct {
		name    string
		traffic *api.DeploymentShapeTraffic
		err     string
	}{
		{"absent", nil, ""},
		{"the example", &api.DeploymentShapeTraffic{Port: 80, Protocol: "http", Listen: "127.0.0.1:8080", DrainTimeout: "30s"}, ""},
		{"tcp on ipv6", &api.DeploymentShapeTraffic{Port: 5432, Protocol: "tcp", Listen: "[::1]:5432"}, ""},
		{"every address", &api.DeploymentShapeTraffic{Port: 80, Listen: ":8080"}, ""},
		{"host name", &api.DeploymentShapeTraffic{Port: 80, Listen: "front.example.com:80"}, ""},
		{"operator backend", &api.DeploymentShapeTraffic{Port: 80, Backend: "web_servers"}, ""},
		{"no drain", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "0"}, ""},
		{"an hour", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "1h"}, ""},
		{"port 0", &api.DeploymentShapeTraffic{Listen: "127.0.0.1:8080"}, "traffic.port 0 is not a port"},
		{"port too big", &api.DeploymentShapeTraffic{Port: 65536, Listen: "127.0.0.1:8080"}, "traffic.port 65536"},
		{"unknown protocol", &api.DeploymentShapeTraffic{Port: 80, Protocol: "udp", Listen: "127.0.0.1:8080"}, `traffic.protocol "udp" is not known`},
		{"nowhere", &api.DeploymentShapeTraffic{Port: 80}, "traffic needs a listen address"},
		{"both", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", Backend: "web"}, "exclude each other"},
		{"no port in listen", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1"}, "is not host:port"},
		{"listen port 0", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:0"}, "has no port"},
		{"bad host", &api.DeploymentShapeTraffic{Port: 80, Listen: "a b:80"}, "names no IP address"},
		{"bad backend", &api.DeploymentShapeTraffic{Port: 80, Backend: "web servers"}, "is not an HAProxy backend name"},
		{"drain too long", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "2h"}, "traffic.drain_timeout"},
		{"negative drain", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "-1s"}, "traffic.drain_timeout"},
		{"drain not a duration", &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "soon"}, "traffic.drain_timeout"},
	}

	for _, c := range cases {
		err := ShapeTraffic(c.traffic)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.err)
		}
	}

	err := Shape(api.DeploymentShapePut{ScalingMaximum: 1, Traffic: &api.DeploymentShapeTraffic{Port: 0, Listen: "127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "traffic.port") {
		t.Errorf("Shape does not check traffic: %v", err)
	}
}

func TestTrafficDrainTimeoutDefault(t *testing.T) {
	d, err := TrafficDrainTimeout(&api.DeploymentShapeTraffic{})
	if err != nil || d != 30*time.Second {
		t.Fatalf("default drain: %v %v", d, err)
	}
}

func TestTrafficListenKey(t *testing.T) {
	if TrafficListenKey("127.0.0.1:80") != TrafficListenKey("[::ffff:127.0.0.1]:80") {
		t.Error("the same address written twice is two keys")
	}

	if TrafficListenKey("127.0.0.1:80") == TrafficListenKey("127.0.0.1:81") {
		t.Error("two ports are one key")
	}
}
