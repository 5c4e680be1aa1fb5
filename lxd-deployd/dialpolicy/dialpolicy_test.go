package dialpolicy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

var errTest = errors.New("refused")

// TestCheck: the policy as a function (nothing is dialled). Mapped IPv6 forms are judged as
// the IPv4 address they carry; loopback is refused only when asked for.
func TestCheck(t *testing.T) {
	probes := Policy{RefuseLoopback: true, Err: errTest}
	hooks := Policy{Err: errTest, AllowedFlag: "--webhook-allowed-networks"}
	cases := []struct {
		policy Policy
		addr   string
		ok     bool
	}{
		{probes, "127.0.0.1", false},
		{probes, "::ffff:127.0.0.1", false},
		{probes, "127.8.9.10", false},
		{probes, "::1", false},
		{probes, "169.254.169.254", false},
		{probes, "::ffff:169.254.169.254", false},
		{probes, "fe80::1", false},
		{probes, "fd00:ec2::254", false},
		{probes, "0.0.0.0", false},
		{probes, "::ffff:0.0.0.0", false},
		{probes, "::", false},
		{probes, "224.0.0.1", false},
		{probes, "ff02::1", false},
		{probes, "255.255.255.255", false},
		{probes, "10.77.0.10", true},
		{probes, "::ffff:10.77.0.10", true},
		{probes, "fd42::7", true},
		{probes, "203.0.113.5", true},
		{hooks, "127.0.0.1", true},
		{hooks, "::ffff:127.0.0.1", true},
		{hooks, "::ffff:169.254.169.254", false},
	}

	for _, c := range cases {
		err := c.policy.Check(netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("loopback refused %v: %s: got %v", c.policy.RefuseLoopback, c.addr, err)
		}

		if err != nil && !errors.Is(err, errTest) {
			t.Errorf("%s: the refusal does not wrap Err: %v", c.addr, err)
		}
	}

	err := probes.Check(netip.MustParseAddr("::ffff:127.0.0.1"))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1 is in 127.0.0.0/8 (loopback") || strings.Contains(err.Error(), "list it in") {
		t.Errorf("a probe's refusal: %v", err)
	}

	err = Policy{Err: errTest}.Control("tcp6", "[::ffff:169.254.169.254]:80", nil)
	if !errors.Is(err, errTest) {
		t.Errorf("Control of a mapped metadata address: %v", err)
	}
}
