package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// The policy is tested as a function: these tests never dial the addresses they check,
// except loopback.
func TestDestinationPolicyCheck(t *testing.T) {
	private, err := ParseNetworks([]string{"10.0.0.0/8", "192.168.1.7", " fd00::/8 "})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		policy DestinationPolicy
		addr   string
		ok     bool
	}{
		{DestinationPolicy{}, "169.254.169.254", false},
		{DestinationPolicy{}, "169.254.0.1", false},
		{DestinationPolicy{}, "::ffff:169.254.169.254", false},
		{DestinationPolicy{}, "fe80::1", false},
		{DestinationPolicy{}, "fd00:ec2::254", false},
		{DestinationPolicy{}, "0.0.0.0", false},
		{DestinationPolicy{}, "::", false},
		{DestinationPolicy{}, "224.0.0.1", false},
		{DestinationPolicy{}, "127.0.0.1", true},
		{DestinationPolicy{}, "::1", true},
		{DestinationPolicy{}, "10.1.2.3", true},
		{DestinationPolicy{}, "192.168.0.1", true},
		{DestinationPolicy{}, "203.0.113.5", true},
		{DestinationPolicy{Allowed: private}, "10.9.9.9", true},
		{DestinationPolicy{Allowed: private}, "192.168.1.7", true},
		{DestinationPolicy{Allowed: private}, "192.168.1.8", false},
		{DestinationPolicy{Allowed: private}, "fd12::1", true},
		{DestinationPolicy{Allowed: private}, "127.0.0.1", false},
		{DestinationPolicy{Allowed: private}, "169.254.169.254", false},
		{DestinationPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("169.254.10.0/24")}}, "169.254.10.2", true},
	}

	for _, c := range cases {
		err := c.policy.Check(netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("%v: %s: got %v", c.policy.Allowed, c.addr, err)
		}

		if err != nil && !errors.Is(err, ErrDestination) {
			t.Errorf("%s: error is not ErrDestination: %v", c.addr, err)
		}
	}

	_, err = ParseNetworks([]string{"not-a-network"})
	if err == nil {
		t.Fatal("a bad network was accepted")
	}
}

// TestDestinationPolicyChecksTheDialledAddress: the name "localhost" is resolved at delivery
// time and the dialled address (loopback) is what the policy judges.
func TestDestinationPolicyChecksTheDialledAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/hook?token=s3cret"

	only10, _ := ParseNetworks([]string{"10.0.0.0/8"})
	for _, c := range []struct {
		policy DestinationPolicy
		ok     bool
	}{{DestinationPolicy{}, true}, {DestinationPolicy{Allowed: only10}, false}} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
		resp, err := c.policy.Client().Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}

		if (err == nil) != c.ok {
			t.Fatalf("policy %v: got %v", c.policy.Allowed, err)
		}

		if err != nil {
			if !errors.Is(err, ErrDestination) {
				t.Fatalf("refusal is not ErrDestination: %v", err)
			}

			if strings.Contains(redactError(err).Error(), "s3cret") {
				t.Fatalf("the error shows the URL's query: %v", redactError(err))
			}
		}
	}
}
