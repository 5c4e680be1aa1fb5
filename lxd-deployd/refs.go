package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// The objects a request is about, read from its path (names unescaped and validated by
// rest.PathName) and ?project=. Handlers, operations and background work pass these refs around
// instead of the *http.Request.

func deploymentFromRequest(r *http.Request) (refs.DeploymentRef, error) {
	project, err := rest.ProjectParam(r)
	if err != nil {
		return refs.DeploymentRef{}, err
	}

	name, err := rest.PathName(r, "deployment", "deployment")
	if err != nil {
		return refs.DeploymentRef{}, err
	}

	return refs.DeploymentRef{Project: project, Name: name}, nil
}

func shapeFromRequest(r *http.Request) (refs.ShapeRef, error) {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return refs.ShapeRef{}, err
	}

	name, err := rest.PathName(r, "shape", "shape")
	if err != nil {
		return refs.ShapeRef{}, err
	}

	return refs.ShapeRef{DeploymentRef: ref, Shape: name}, nil
}

func instanceFromRequest(r *http.Request) (refs.InstanceRef, error) {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return refs.InstanceRef{}, err
	}

	name, err := rest.PathName(r, "instance", "instance")
	if err != nil {
		return refs.InstanceRef{}, err
	}

	return refs.InstanceRef{ShapeRef: ref, Instance: name}, nil
}

// manifestFromRequest returns the deployment and manifest a request is about.
func manifestFromRequest(r *http.Request) (refs.DeploymentRef, string, error) {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return refs.DeploymentRef{}, "", err
	}

	name, err := rest.PathName(r, "manifest", "manifest")
	if err != nil {
		return refs.DeploymentRef{}, "", err
	}

	return ref, name, nil
}
