package backend

import (
	"context"

	"github.com/gorilla/websocket"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// The methods here are what the daemon's packages ask of LXD, one question each, so that
// LXD's raw client stays inside this package (issue 34): each takes the connection of the
// moment, and answers 503 saying why when LXD is unavailable.

// Available returns nil while LXD is connected, else the 503 error saying why not: a
// request that needs LXD later is refused before anything is stored.
func (l *LXD) Available() error {
	_, err := l.connected()
	return err
}

// Requests returns the connection as the one method raw requests need (ListInstanceServing,
// ExecCheck), or a 503 error saying why LXD is unavailable.
func (l *LXD) Requests() (DoHTTPer, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	return c, nil
}

// Image reads one image of a project by fingerprint (LXD's 404 when it has none).
func (l *LXD) Image(project string, fingerprint string) (*lxdapi.Image, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	image, _, err := c.UseProject(project).GetImage(fingerprint)
	return image, err
}

// ImageAlias reads one image alias of a project (LXD's 404 when it has none).
func (l *LXD) ImageAlias(project string, alias string) (*lxdapi.ImageAliasesEntry, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	entry, _, err := c.UseProject(project).GetImageAlias(alias)
	return entry, err
}

// Profile reads one profile of a project (LXD's 404 when it has none).
func (l *LXD) Profile(project string, name string) (*lxdapi.Profile, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	profile, _, err := c.UseProject(project).GetProfile(name)
	return profile, err
}

// InstanceWithState reads one instance of a project, and its state when LXD gives it (nil
// otherwise: the instance is shown without it).
func (l *LXD) InstanceWithState(project string, name string) (*lxdapi.Instance, *lxdapi.InstanceState, error) {
	c, err := l.connected()
	if err != nil {
		return nil, nil, err
	}

	c = c.UseProject(project)
	instance, _, err := c.GetInstance(name)
	if err != nil {
		return nil, nil, err
	}

	state, _, err := c.GetInstanceState(name)
	if err != nil {
		state = nil
	}

	return instance, state, nil
}

// VMs lists the virtual machines of every project, or of the default project where LXD
// cannot list across projects (5.0 may not).
func (l *LXD) VMs() ([]lxdapi.Instance, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	instances, err := c.GetInstancesAllProjects(lxdapi.InstanceTypeVM)
	if err != nil {
		instances, err = c.GetInstances(lxdapi.InstanceTypeVM)
	}

	return instances, err
}

// LifecycleEvents subscribes to LXD's lifecycle events of every project; the caller reads
// the websocket and closes it.
func (l *LXD) LifecycleEvents() (*websocket.Conn, error) {
	c, err := l.connected()
	if err != nil {
		return nil, err
	}

	return c.RawWebsocket("/events?type=lifecycle&all-projects=true")
}

// SetInstanceState changes one instance's state (start, stop, ...) and waits for LXD to
// finish, as UpdateInstanceState does.
func (l *LXD) SetInstanceState(ctx context.Context, project string, name string, state lxdapi.InstanceStatePut) error {
	c, err := l.Conn()
	if err != nil {
		return err
	}

	return UpdateInstanceState(ctx, c, project, name, state)
}

// StartShapeListing is StartShapeInstanceStatuses on the connection of the moment.
func (l *LXD) StartShapeListing(project string, deployment string, shape string) (func(want []string) (map[string]lxdapi.Instance, error), error) {
	c, err := l.Conn()
	if err != nil {
		return nil, err
	}

	return StartShapeInstanceStatuses(c, project, deployment, shape), nil
}
