package validate

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// trafficDrainMax bounds a drain: a delete waits at most this long for open connections,
// so a stuck client cannot hold a scale-in, a rollout or a member drain for long.
const trafficDrainMax = time.Hour

// ShapeTraffic checks a shape's traffic object (absent is fine): a port, a known protocol,
// either a listen address (host:port) or an operator's backend name, and a drain timeout
// from 0 to 1h. That no two shapes listen on the same address is the daemon's question
// (it reads the other shapes), not a syntax one.
func ShapeTraffic(t *api.DeploymentShapeTraffic) error {
	if t == nil {
		return nil
	}

	if t.Port < 1 || t.Port > 65535 {
		return fmt.Errorf("traffic.port %d is not a port: use 1 to 65535", t.Port)
	}

	switch t.Protocol {
	case "", api.TrafficProtocolHTTP, api.TrafficProtocolTCP:
	default:
		return fmt.Errorf("traffic.protocol %q is not known: use http or tcp", t.Protocol)
	}

	switch {
	case t.Listen == "" && t.Backend == "":
		return fmt.Errorf("traffic needs a listen address (such as 127.0.0.1:8080) or the backend of an operator's HAProxy to fill")
	case t.Listen != "" && t.Backend != "":
		return fmt.Errorf("traffic.listen and traffic.backend exclude each other: listen for a door of the daemon's own, backend to fill an operator's")
	case t.Listen != "":
		err := listenAddress(t.Listen)
		if err != nil {
			return fmt.Errorf("traffic.listen: %w", err)
		}

	default:
		err := backendName(t.Backend)
		if err != nil {
			return fmt.Errorf("traffic.backend: %w", err)
		}
	}

	_, err := TrafficDrainTimeout(t)
	if err != nil {
		return err
	}

	_, _, err = TrafficHold(t)
	return err
}

// Bounds of a front door's hold queue (doc/traffic.md, "Scale to zero"). A held request
// waits below the private door's server timeout (60 s), so that the hold's 503 naming the
// limit comes before HAProxy's 504.
const (
	trafficHoldMaxLimit     = 10000
	trafficHoldTimeoutLimit = 50 * time.Second
)

// TrafficHold returns how many connections a shape's front door holds while the shape has
// no serving instance and how long each waits (the defaults when the object names none).
func TrafficHold(t *api.DeploymentShapeTraffic) (int, time.Duration, error) {
	n := t.HoldMax
	if n == 0 {
		n = api.TrafficHoldMaxDefault
	}

	if n < 1 || n > trafficHoldMaxLimit {
		return 0, 0, fmt.Errorf("traffic.hold_max %d is out of range: hold 1 to %d connections (0 or absent: %d)", t.HoldMax, trafficHoldMaxLimit, api.TrafficHoldMaxDefault)
	}

	value := t.HoldTimeout
	if value == "" {
		value = api.TrafficHoldTimeoutDefault
	}

	d, err := time.ParseDuration(value)
	if err != nil || d < time.Second || d > trafficHoldTimeoutLimit {
		return 0, 0, fmt.Errorf("traffic.hold_timeout must be a duration such as 30s or 45s, from 1s to %s, got %q", trafficHoldTimeoutLimit, value)
	}

	return n, d, nil
}

// TrafficDrainTimeout returns a traffic object's drain timeout (the default when it names
// none).
func TrafficDrainTimeout(t *api.DeploymentShapeTraffic) (time.Duration, error) {
	value := t.DrainTimeout
	if value == "" {
		value = api.TrafficDrainTimeoutDefault
	}

	if value == "0" {
		return 0, nil
	}

	d, err := time.ParseDuration(value)
	if err != nil || d < 0 || d > trafficDrainMax {
		return 0, fmt.Errorf("traffic.drain_timeout must be a duration such as 30s or 5m, from 0 to %s, got %q", trafficDrainMax, value)
	}

	return d, nil
}

// listenAddress checks a host:port a door can bind: an IP address or a host name, and a
// port from 1 to 65535.
func listenAddress(value string) error {
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		return fmt.Errorf("%q is not host:port (such as 127.0.0.1:8080 or [::1]:8080)", value)
	}

	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has no port from 1 to 65535", value)
	}

	if host != "" && net.ParseIP(host) == nil && !hostName(host) {
		return fmt.Errorf("%q names no IP address or host name", value)
	}

	return nil
}

// hostName says whether s is a DNS name (letters, digits, hyphens and dots).
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}

	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}

	return true
}

// backendName checks an HAProxy backend name: HAProxy allows letters, digits, '-', '_',
// '.' and ':'; anything else would break the runtime API commands that name it.
func backendName(value string) error {
	if len(value) > 64 {
		return fmt.Errorf("%q is longer than 64 characters", value)
	}

	for _, r := range value {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return fmt.Errorf("%q is not an HAProxy backend name: use letters, digits, '-', '_', '.' and ':'", value)
		}
	}

	return nil
}

// TrafficListenKey is what two shapes' listen addresses are compared by: the same host
// and port, however written ("localhost" is not resolved; 127.0.0.1 and [::ffff:127.0.0.1]
// are the same).
func TrafficListenKey(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}

	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}

	return net.JoinHostPort(host, port)
}
