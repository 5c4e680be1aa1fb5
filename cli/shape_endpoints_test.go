package main

import (
	"reflect"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestEndpointsListing(t *testing.T) {
	l := endpointsListing([]api.DeploymentShapeEndpoint{
		{Instance: "web1", Address: "10.0.0.1", Port: 80, State: api.EndpointServing},
		{Instance: "web2", Port: 80, State: api.EndpointNotReady},
		{Instance: "web3", Address: "10.0.0.3", Port: 80, State: api.EndpointDraining},
	})
	want := [][]string{{"web1", "10.0.0.1", "80", "serving"}, {"web2", "-", "80", "not-ready"}, {"web3", "10.0.0.3", "80", "draining"}}
	if !reflect.DeepEqual(l.rows, want) || len(l.notes) != 1 || l.notes[0] != "1 serving, 1 draining, 1 not ready" {
		t.Fatalf("rows %v, notes %v", l.rows, l.notes)
	}
}
