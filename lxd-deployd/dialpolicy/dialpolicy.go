// Package dialpolicy says which addresses the daemon's own outgoing connections may reach:
// webhook deliveries and http/tcp health checks. The address is judged in the dialer's
// Control hook, just before connect(2), so it is the address really dialled (after DNS,
// after any mapping) and no code path can skip it.
package dialpolicy

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// Policy says which addresses a dialer may connect to.
type Policy struct {
	// Allowed networks; empty means any address except the refused ones. Networks listed
	// here are allowed even when refused by default (an admin can list a link-local
	// governor explicitly).
	Allowed []netip.Prefix

	// RefuseLoopback refuses the host's loopback networks too. Health checks set it: an
	// instance's address is what root inside the instance chose, and never the host's
	// loopback. Webhooks do not: governors often run beside the daemon.
	RefuseLoopback bool

	// Err is wrapped by every refusal, for errors.Is.
	Err error

	// AllowedFlag names the daemon flag that lists Allowed ("" when there is none), for
	// refusals to say how to allow an address.
	AllowedFlag string
}

// refusedByDefault are link-local networks (where clouds put their metadata services:
// 169.254.169.254, fd00:ec2::254) and addresses that are not a destination at all.
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

// loopback are the host's own loopback networks.
var loopback = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
}

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

// Check says whether a connection may be made to addr.
func (p Policy) Check(addr netip.Addr) error {
	addr = addr.Unmap() // ::ffff:169.254.169.254 is 169.254.169.254, ::ffff:127.0.0.1 is 127.0.0.1
	for _, n := range p.Allowed {
		if n.Contains(addr) {
			return nil
		}
	}

	allowIt := ""
	if p.AllowedFlag != "" {
		allowIt = "; list it in " + p.AllowedFlag + " to allow it"
	}

	for _, n := range refusedByDefault {
		if n.Contains(addr) {
			return fmt.Errorf("%w: %s is in %s (link-local, metadata or not a unicast address)%s", p.Err, addr, n, allowIt)
		}
	}

	if p.RefuseLoopback {
		for _, n := range loopback {
			if n.Contains(addr) {
				return fmt.Errorf("%w: %s is in %s (loopback: this host, never an instance)%s", p.Err, addr, n, allowIt)
			}
		}
	}

	if len(p.Allowed) > 0 {
		return fmt.Errorf("%w: %s is not in %s", p.Err, addr, p.AllowedFlag)
	}

	return nil
}

// Control is a net.Dialer's Control hook under the policy: it checks the address the
// dialer is about to connect to.
func (p Policy) Control(network string, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read dialled address %q", p.Err, address)
	}

	return p.Check(ap.Addr())
}
