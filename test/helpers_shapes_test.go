package test

import (
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// webShape is a shape of busybox containers with scaling bounds min..max.
func webShape(name string, min int, max int) api.DeploymentShapesPost {
	return api.DeploymentShapesPost{
		DeploymentShapePost: api.DeploymentShapePost{Name: name},
		DeploymentShapePut: api.DeploymentShapePut{
			InstanceTemplate: lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}},
			ScalingMinimum:   min,
			ScalingMaximum:   max,
		},
	}
}

// setVersion makes the template set user.version, which new instances carry.
func setVersion(version string) func(put *api.DeploymentShapePut) {
	return func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"user.version": version}
	}
}
