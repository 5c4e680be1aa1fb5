package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// DestinationPolicy says which addresses webhook deliveries may connect to. A webhook URL
// is an admin's choice, but the delivery log shows each attempt's result: without a policy
// an admin could use the daemon as a port scanner of its own networks, or read a cloud's
// metadata service from the host.
type DestinationPolicy struct {
	// Allowed networks; empty means any address except the refused ones below. Networks
	// listed here are allowed even when refused by default (an admin can list a link-local
	// governor explicitly).
	Allowed []netip.Prefix
}

// refusedByDefault are link-local networks (where clouds put their metadata services:
// 169.254.169.254, fd00:ec2::254) and addresses that are not a destination at all.
// Loopback and private networks stay allowed: governors often run beside the daemon.
var refusedByDefault = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("ff00::/8"),
}

// ErrDestination is wrapped by refusals of the policy.
var ErrDestination = errors.New("webhook destination not allowed")

// ParseNetworks reads a list of CIDR networks (or single addresses), as given to
// --webhook-allowed-networks.
func ParseNetworks(values []string) ([]netip.Prefix, error) {
	prefixes := make([]netip.Prefix, 0, len(values))
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}

		p, err := netip.ParsePrefix(v)
		if err != nil {
			addr, addrErr := netip.ParseAddr(v)
			if addrErr != nil {
				return nil, fmt.Errorf("%q is not a network: write CIDR such as 10.0.0.0/8 or fd00::/8", v)
			}

			p = netip.PrefixFrom(addr, addr.BitLen())
		}

		prefixes = append(prefixes, p.Masked())
	}

	return prefixes, nil
}

// Check says whether a delivery may connect to addr.
func (p DestinationPolicy) Check(addr netip.Addr) error {
	addr = addr.Unmap() // ::ffff:169.254.169.254 is 169.254.169.254
	for _, n := range p.Allowed {
		if n.Contains(addr) {
			return nil
		}
	}

	for _, n := range refusedByDefault {
		if n.Contains(addr) {
			return fmt.Errorf("%w: %s is in %s (link-local, metadata or not a unicast address); list it in --webhook-allowed-networks to allow it", ErrDestination, addr, n)
		}
	}

	if len(p.Allowed) > 0 {
		return fmt.Errorf("%w: %s is not in --webhook-allowed-networks", ErrDestination, addr)
	}

	return nil
}

// control checks the address a dialer is about to connect to: the one the name resolved to
// at delivery time, after any DNS answer, so a name that resolves to a refused address
// (or changes to one) is refused too.
func (p DestinationPolicy) control(network string, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read dialled address %q", ErrDestination, address)
	}

	return p.Check(ap.Addr())
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

// SetDestinationPolicy makes every later delivery follow the policy.
func (d *Dispatcher) SetDestinationPolicy(p DestinationPolicy) {
	d.client = p.Client()
}

// RedactURL hides what a webhook URL may carry as credentials (user info, query,
// fragment), for callers that are not admins and for logs and delivery errors.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if raw == "" {
			return ""
		}

		return "(redacted)"
	}

	redacted := u.User != nil || u.RawQuery != "" || u.Fragment != ""
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	u.ForceQuery = false
	if redacted {
		return u.String() + "?(redacted)"
	}

	return u.String()
}

// redactError hides the URL inside an HTTP client error (url.Error carries it whole,
// query included) before the error is logged or stored in the delivery log.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: RedactURL(ue.URL), Err: ue.Err}
	}

	return err
}
