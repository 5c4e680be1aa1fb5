package validate

import (
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GovernorRegistration checks a governor's registration (PUT .../governor): its name, and
// its ttl in seconds, 0 meaning the default, which it returns filled in.
func GovernorRegistration(req api.DeploymentGovernorPut) (api.DeploymentGovernorPut, error) {
	err := Name("governor", req.Name)
	if err != nil {
		return req, err
	}

	if req.TTL == 0 {
		req.TTL = api.DeploymentGovernorTTLDefault
	}

	if req.TTL < api.DeploymentGovernorTTLMinimum || req.TTL > api.DeploymentGovernorTTLMaximum {
		return req, fmt.Errorf("ttl %d is out of range: give %d to %d seconds, or 0 for %d", req.TTL, api.DeploymentGovernorTTLMinimum, api.DeploymentGovernorTTLMaximum, api.DeploymentGovernorTTLDefault)
	}

	return req, nil
}
