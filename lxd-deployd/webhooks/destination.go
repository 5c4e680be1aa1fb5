package webhooks

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/dialpolicy"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/redact"
)

// DestinationPolicy says which addresses webhook deliveries may connect to. A webhook URL
// is an admin's choice, but the delivery log shows each attempt's result: without a policy
// an admin could use the daemon as a port scanner of its own networks, or read a cloud's
// metadata service from the host. The rule itself is dialpolicy's, shared with the health
// checks' probes; loopback and private networks stay allowed here: governors often run
// beside the daemon.
type DestinationPolicy struct {
	// Allowed networks; empty means any address except the refused ones (link-local,
	// metadata, not unicast). Networks listed here are allowed even when refused by default
	// (an admin can list a link-local governor explicitly).
	Allowed []netip.Prefix
}

// ErrDestination is wrapped by refusals of the policy.
var ErrDestination = errors.New("webhook destination not allowed")

// ParseNetworks reads a list of CIDR networks (or single addresses), as given to
// --webhook-allowed-networks.
func ParseNetworks(values []string) ([]netip.Prefix, error) {
	return dialpolicy.ParseNetworks(values)
}

// policy is the shared rule with the webhook's settings.
func (p DestinationPolicy) policy() dialpolicy.Policy {
	return dialpolicy.Policy{Allowed: p.Allowed, Err: ErrDestination, AllowedFlag: "--webhook-allowed-networks"}
}

// Check says whether a delivery may connect to addr.
func (p DestinationPolicy) Check(addr netip.Addr) error {
	return p.policy().Check(addr)
}

// control checks the address a dialer is about to connect to: the one the name resolved to
// at delivery time, after any DNS answer, so a name that resolves to a refused address
// (or changes to one) is refused too.
func (p DestinationPolicy) control(network string, address string, c syscall.RawConn) error {
	return p.policy().Control(network, address, c)
}

// Client is the HTTP client deliveries use under this policy: no proxy (it would hide the
// destination), no redirects, and every connection checked when it is dialled.
func (p DestinationPolicy) Client() *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}

	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// redactError hides the URL inside an HTTP client error (url.Error carries it whole,
// query included) before the error is logged or stored in the delivery log.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: redact.URL(ue.URL), Err: ue.Err}
	}

	return err
}
