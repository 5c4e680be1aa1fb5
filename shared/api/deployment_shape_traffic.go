package api

// DeploymentShapeTraffic says what traffic a shape's instances serve and where its front
// door listens (doc/traffic.md). Absent, the shape has no front door and its instances are
// deleted at once, as before.
type DeploymentShapeTraffic struct {
	// The port the instances serve on (1-65535)
	// Example: 80
	Port int `json:"port" yaml:"port"`

	// "http" or "tcp": how the front door balances and checks the instances
	// (default http)
	// Example: http
	Protocol string `json:"protocol,omitempty" yaml:"protocol,omitempty"`

	// Where the front door accepts connections (host:port); empty when backend names an
	// operator's backend to fill instead
	// Example: 127.0.0.1:8080
	Listen string `json:"listen,omitempty" yaml:"listen,omitempty"`

	// An operator's existing HAProxy backend the daemon fills with the instances, instead
	// of listening itself (exclusive with listen)
	// Example: web_servers
	Backend string `json:"backend,omitempty" yaml:"backend,omitempty"`

	// How long a leaving instance may finish its open connections before it is deleted
	// anyway (0 to 1h, default 30s; AWS's deregistration delay)
	// Example: 30s
	DrainTimeout string `json:"drain_timeout,omitempty" yaml:"drain_timeout,omitempty"`

	// How many connections the front door holds while the shape has no serving instance
	// (a shape with scaling_minimum 0 at zero, waking; 1 to 10000, default 100); one more
	// is refused (http: 503 saying so, with Retry-After; tcp: closed)
	// Example: 100
	HoldMax int `json:"hold_max,omitempty" yaml:"hold_max,omitempty"`

	// How long a held connection waits for an instance before it is refused (1s to 50s,
	// default 30s; below the private door's 60 s server timeout)
	// Example: 30s
	HoldTimeout string `json:"hold_timeout,omitempty" yaml:"hold_timeout,omitempty"`
}

// Traffic protocols.
const (
	TrafficProtocolHTTP = "http"
	TrafficProtocolTCP  = "tcp"
)

// Hold defaults (doc/traffic.md, "Scale to zero").
const (
	TrafficHoldMaxDefault     = 100
	TrafficHoldTimeoutDefault = "30s"
)

// TrafficDrainTimeoutDefault is the drain timeout of a traffic object that names none.
const TrafficDrainTimeoutDefault = "30s"

// Endpoint states (GET .../shapes/{s}/endpoints).
const (
	// EndpointServing takes new connections: running, healthy, past min_ready, in no hook.
	EndpointServing = "serving"
	// EndpointDraining is leaving: it takes no new connections, its open ones finish.
	EndpointDraining = "draining"
	// EndpointNotReady takes no traffic yet (starting, unhealthy, in a launch hook, or
	// without an address).
	EndpointNotReady = "not-ready"
)

// DeploymentShapeEndpoint is one instance of a shape as a load balancer should see it.
type DeploymentShapeEndpoint struct {
	// The instance's name
	// Example: web-r3-1a2b3c
	Instance string `json:"instance" yaml:"instance"`

	// The instance's IP address as LXD reports it (empty until it has one)
	// Example: 10.12.0.5
	Address string `json:"address" yaml:"address"`

	// The port it serves on (the shape's traffic.port)
	// Example: 80
	Port int `json:"port" yaml:"port"`

	// serving, draining or not-ready
	// Example: serving
	State string `json:"state" yaml:"state"`

	// What the front door measured for the instance at its last read (GET only: absent
	// from events, without a door, and on a member whose door has no figures yet)
	Traffic *WebhookTrafficMetrics `json:"traffic,omitempty" yaml:"traffic,omitempty"`
}

// EventTypeEndpoints is the /1.0/events type of a shape's endpoint changes: its metadata
// is a DeploymentShapeEndpointsEvent.
const EventTypeEndpoints = "endpoints"

// DeploymentShapeEndpointsEvent is sent on /1.0/events (type "endpoints") whenever a
// shape's endpoints change: the whole new list, so a follower needs no earlier event.
type DeploymentShapeEndpointsEvent struct {
	// The deployment
	// Example: shop
	Deployment string `json:"deployment" yaml:"deployment"`

	// The shape
	// Example: web
	Shape string `json:"shape" yaml:"shape"`

	// Every endpoint of the shape now
	Endpoints []DeploymentShapeEndpoint `json:"endpoints" yaml:"endpoints"`
}
