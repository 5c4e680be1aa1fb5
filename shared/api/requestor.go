package api

// Requestor protocols beside the API's own (unix, tls, governor).
const (
	// RequestorInternal marks the daemon's own work: reconcile, rollouts, triggers.
	RequestorInternal = "internal"
)

// DeploymentRequestor says who asked for a change. Revisions, rollouts and the activity log
// record it when the change starts, so background work keeps naming the person or governor
// that set it going.
type DeploymentRequestor struct {
	// How the request came in: unix, tls, governor, or internal (the daemon itself)
	// Example: tls
	Protocol string `json:"protocol" yaml:"protocol"`

	// Who asked: a certificate's name, the unix socket user, or the daemon's component
	// Example: laptop
	Name string `json:"name" yaml:"name"`

	// Fingerprint of the caller's certificate, when it used one
	// Example: 2d1e7b0f4a9c...
	Fingerprint string `json:"fingerprint,omitempty" yaml:"fingerprint,omitempty"`

	// Deployment key the caller acted through (deployments certificates and governors)
	// Example: k1
	Key string `json:"key,omitempty" yaml:"key,omitempty"`
}

// InternalRequestor names one of the daemon's own components (reconcile, a rollout, a
// trigger) as the requestor of the work it does.
func InternalRequestor(component string) DeploymentRequestor {
	return DeploymentRequestor{Protocol: RequestorInternal, Name: component}
}

// String names the requestor in one short phrase, for the activity log and CLI tables.
func (r DeploymentRequestor) String() string {
	name := r.Name
	if r.Key != "" {
		name += " (key " + r.Key + ")"
	}

	if r.Protocol == "" {
		return name
	}

	return r.Protocol + ":" + name
}
