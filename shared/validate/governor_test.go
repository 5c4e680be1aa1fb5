package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestGovernorRegistration: a ttl of 0 is the default; one outside the bounds, or a bad
// name, is refused.
func TestGovernorRegistration(t *testing.T) {
	req, err := GovernorRegistration(api.DeploymentGovernorPut{Name: "gov-a"})
	if err != nil || req.TTL != api.DeploymentGovernorTTLDefault {
		t.Fatalf("the default ttl: %+v %v", req, err)
	}

	for _, ttl := range []int{api.DeploymentGovernorTTLMinimum - 1, api.DeploymentGovernorTTLMaximum + 1, -1} {
		_, err = GovernorRegistration(api.DeploymentGovernorPut{Name: "gov-a", TTL: ttl})
		if err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("ttl %d: %v", ttl, err)
		}
	}

	_, err = GovernorRegistration(api.DeploymentGovernorPut{Name: "gov a", TTL: 30})
	if err == nil {
		t.Fatal("a bad name")
	}
}
