package api

import (
	"net/url"
	"strconv"
)

// DefaultProject is the LXD project used when a request names none.
const DefaultProject = "default"

// path joins escaped path segments under /1.0 and adds ?project= for non-default projects,
// the way LXD builds the URLs it hands out.
func path(project string, segments ...string) string {
	p := "/1.0"
	for _, segment := range segments {
		p += "/" + url.PathEscape(segment)
	}

	if project != "" && project != DefaultProject {
		p += "?project=" + url.QueryEscape(project)
	}

	return p
}

// DeploymentURL returns the URL of a deployment.
func DeploymentURL(project string, deployment string) string {
	return path(project, "deployments", deployment)
}

// DeploymentKeyURL returns the URL of a deployment key.
func DeploymentKeyURL(project string, deployment string, key string) string {
	return path(project, "deployments", deployment, "keys", key)
}

// DeploymentShapeURL returns the URL of a shape.
func DeploymentShapeURL(project string, deployment string, shape string) string {
	return path(project, "deployments", deployment, "shapes", shape)
}

// DeploymentShapeInstanceURL returns the URL of an instance of a shape.
func DeploymentShapeInstanceURL(project string, deployment string, shape string, instance string) string {
	return path(project, "deployments", deployment, "shapes", shape, "instances", instance)
}

// DeploymentShapeRevisionURL returns the URL of a shape revision.
func DeploymentShapeRevisionURL(project string, deployment string, shape string, revision int) string {
	return path(project, "deployments", deployment, "shapes", shape, "revisions", strconv.Itoa(revision))
}

// DeploymentShapeRolloutURL returns the URL of a shape rollout.
func DeploymentShapeRolloutURL(project string, deployment string, shape string, number int) string {
	return path(project, "deployments", deployment, "shapes", shape, "rollouts", strconv.Itoa(number))
}

// DeploymentWebhookDeliveryURL returns the URL of a webhook delivery.
func DeploymentWebhookDeliveryURL(project string, deployment string, id string) string {
	return path(project, "deployments", deployment, "webhook", "deliveries", id)
}

// InstanceURL returns the URL of an instance in LXD's own API.
func InstanceURL(project string, instance string) string {
	return path(project, "instances", instance)
}

// CertificateURL returns the URL of a trusted certificate.
func CertificateURL(fingerprint string) string {
	return path("", "certificates", fingerprint)
}
