package main

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// An untouched shape comes back from the edit YAML exactly as it was: the lists it left
// unset stay unset, the ones it set (or emptied) stay as they are.
func TestKeepUnsetLists(t *testing.T) {
	original := api.DeploymentShapePut{Health: &api.DeploymentShapeHealth{Command: []string{"true"}}}
	original.InstanceTemplate.Source = lxdapi.InstanceSource{Type: "image", Alias: "busybox"}
	original.InstanceTemplate.Profiles = nil
	data, err := yaml.Marshal(original)
	if err != nil {
		t.Fatal(err)
	}

	var edited api.DeploymentShapePut
	err = decodeYAML(data, &edited)
	if err != nil {
		t.Fatal(err)
	}

	if edited.InstanceTemplate.Profiles == nil {
		t.Fatal("yaml.v2 no longer writes a nil list as []: keepUnsetLists may be unneeded")
	}

	keepUnsetLists(&original, &edited)
	if edited.InstanceTemplate.Profiles != nil || edited.InstanceTemplate.Source.ConversionOptions != nil || len(edited.Health.Command) != 1 {
		t.Fatalf("after keepUnsetLists: %+v %+v", edited.InstanceTemplate, edited.Health)
	}

	// A list the shape set empty stays empty (no profiles at all).
	original.InstanceTemplate.Profiles = []string{}
	edited.InstanceTemplate.Profiles = []string{}
	keepUnsetLists(&original, &edited)
	if edited.InstanceTemplate.Profiles == nil {
		t.Fatal("an empty list the shape had became unset")
	}
}
