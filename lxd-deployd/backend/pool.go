package backend

import (
	"context"
	"fmt"
	"maps"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// ConfigWarmPool marks an instance kept stopped in a shape's warm pool: it carries the
// deployment and shape keys (so that it is protected and DeleteInstance may remove it) but
// is not an instance of the shape, and reconcile must not take it for an orphan.
const ConfigWarmPool = "user.lxd-deployd.warm-pool"

// CreatePoolInstance makes a warm pool instance from a shape's request: created, never
// started. A failed create leaves nothing behind, as CreateInstance.
func CreatePoolInstance(ctx context.Context, conn *Conn, project string, req lxdapi.InstancesPost) error {
	c := conn.raw()
	req.Config = maps.Clone(req.Config)
	req.Config[ConfigWarmPool] = "true"
	return create(ctx, c, project, "", req, false)
}

// TakePoolInstance turns a stopped warm pool instance into the instance req describes:
// renamed, given req's config and devices (its name-bound keys, a governor socket), and
// started. renamed says which name the instance has when it fails: the caller removes
// that one, never an instance that had req's name before.
func TakePoolInstance(ctx context.Context, conn *Conn, project string, poolName string, req lxdapi.InstancesPost) (renamed bool, err error) {
	c := conn.raw()
	err = SafeLimits(req.Config)
	if err != nil {
		return false, err
	}

	c = c.UseProject(project)
	_, _, err = c.GetInstance(req.Name)
	if err == nil {
		return false, lxdapi.StatusErrorf(http.StatusConflict, "LXD already has an instance named %q in project %q: pick another name", req.Name, project)
	}

	err = wait(ctx)(c.RenameInstance(poolName, lxdapi.InstancePost{Name: req.Name}))
	if err != nil {
		return false, fmt.Errorf("rename warm pool instance %s: %w", poolName, err)
	}

	instance, etag, err := c.GetInstance(req.Name)
	if err != nil {
		return true, err
	}

	// LXD's volatile keys stay; the pool mark goes; the shape's keys come from req.
	put := instance.Writable()
	delete(put.Config, ConfigWarmPool)
	maps.Copy(put.Config, req.Config)
	put.Devices = maps.Clone(req.Devices)
	err = wait(ctx)(c.UpdateInstance(req.Name, put, etag))
	if err != nil {
		return true, fmt.Errorf("configure warm pool instance: %w", err)
	}

	return true, wait(ctx)(c.UpdateInstanceState(req.Name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, ""))
}

// ReturnToPool stops an instance (cleanly, then by force after the timeout), renames it to
// poolName and marks it as a warm pool instance.
func ReturnToPool(ctx context.Context, conn *Conn, project string, name string, poolName string, stopTimeout int) error {
	c := conn.raw()
	c = c.UseProject(project)
	instance, _, err := c.GetInstance(name)
	if err != nil {
		return err
	}

	if instance.StatusCode != lxdapi.Stopped {
		err = wait(ctx)(c.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Timeout: stopTimeout}, ""))
		if err != nil {
			err = wait(ctx)(c.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""))
		}

		if err != nil {
			return fmt.Errorf("stop: %w", err)
		}
	}

	err = wait(ctx)(c.RenameInstance(name, lxdapi.InstancePost{Name: poolName}))
	if err != nil {
		return fmt.Errorf("rename to %s: %w", poolName, err)
	}

	instance, etag, err := c.GetInstance(poolName)
	if err != nil {
		return err
	}

	put := instance.Writable()
	put.Config[ConfigWarmPool] = "true"
	return wait(ctx)(c.UpdateInstance(poolName, put, etag))
}
