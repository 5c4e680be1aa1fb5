package authz

import (
	"context"
	"errors"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// vms is a fake LXD listing of virtual machines.
type vms struct {
	list []lxdapi.Instance
	err  error
}

func (v vms) VMs() ([]lxdapi.Instance, error) { return v.list, v.err }

func vm(name string, vsockID string, status lxdapi.StatusCode) lxdapi.Instance {
	return lxdapi.Instance{Name: name, Project: "p1", Config: map[string]string{"volatile.vsock_id": vsockID}, StatusCode: status}
}

// TestInstanceByVsockID: the one running VM with that context id is calling; none, or two,
// cannot be told apart and are refused.
func TestInstanceByVsockID(t *testing.T) {
	name, project, err := instanceByVsockID(vms{list: []lxdapi.Instance{vm("a", "7", lxdapi.Stopped), vm("b", "7", lxdapi.Running), vm("c", "8", lxdapi.Running)}}, 7)
	if err != nil || name != "b" || project != "p1" {
		t.Errorf("one running VM: %q %q %v", name, project, err)
	}

	_, _, err = instanceByVsockID(vms{list: []lxdapi.Instance{vm("b", "7", lxdapi.Running), vm("c", "7", lxdapi.Running)}}, 7)
	wantErr(t, "two", err, 403, "2 running LXD instances have vsock context id 7")
	_, _, err = instanceByVsockID(vms{}, 7)
	wantErr(t, "none", err, 403, "0 running LXD instances")
	broken := errors.New("lxd is away")
	_, _, err = instanceByVsockID(vms{err: broken}, 7)
	if !errors.Is(err, broken) {
		t.Errorf("LXD's error: %v", err)
	}
}

// TestAuthenticateGovernorWithoutToken: an unknown transport is refused; without a bearer
// token the caller is untrusted but known by its instance (GET /1.0 stays public); a
// deployer's credential goes to AuthenticateDeployer.
func TestAuthenticateGovernorWithoutToken(t *testing.T) {
	c, _ := fixture(t)
	ctx := context.Background()
	_, err := AuthenticateGovernor(ctx, "", nil, c.DB, vms{}, nil)
	wantErr(t, "no transport", err, 401, "unknown governor transport")

	conn := &governor.Conn{Instance: "web-1", Project: "default"}
	for _, header := range []string{"", "Bearer ", "Basic abc"} {
		caller, err := AuthenticateGovernor(ctx, header, conn, c.DB, vms{}, nil)
		if err != nil || caller.Trusted || caller.Protocol != auth.ProtocolGovernor || caller.Instance != "web-1" || caller.InstanceProject != "default" {
			t.Errorf("header %q: %+v %v", header, caller, err)
		}
	}

	_, err = AuthenticateGovernor(ctx, "Bearer "+rollout.CredentialPrefix+"1-00", conn, c.DB, vms{}, nil)
	if !errors.Is(err, ErrDeployerRevoked) {
		t.Errorf("an unknown deployer credential: %v", err)
	}
}
