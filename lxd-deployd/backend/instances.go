package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"strings"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// Config keys that tie an LXD instance to its deployment and shape. The protection key makes
// LXD itself refuse a plain `lxc delete`, so that nobody shrinks a shape below its minimum
// behind lxd-deployd's back (seed 004's edge case).
const (
	ConfigDeployment = "user.lxd-deployd.deployment"
	ConfigShape      = "user.lxd-deployd.shape"
	configProtection = "security.protection.delete"
)

// TemplateHash identifies an instance template, so that instances record which version of
// their shape they were made from.
func TemplateHash(template lxdapi.InstancesPost) string {
	encoded, _ := json.Marshal(template)
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:6])
}

// InstanceRequest builds the LXD create request for an instance of a shape: the shape's
// template, the name, and the keys that tie it to us.
func InstanceRequest(template lxdapi.InstancesPost, name string, deployment string, shape string) lxdapi.InstancesPost {
	req := template
	req.Name = name
	req.Config = maps.Clone(template.Config)
	if req.Config == nil {
		req.Config = map[string]string{}
	}

	req.Config[ConfigDeployment] = deployment
	req.Config[ConfigShape] = shape
	req.Config[configProtection] = "true"
	return req
}

// wait returns a function that waits for the LXD operation an API call started, and
// cancels it when ctx ends: wait(ctx)(c.DeleteInstance(name)).
func wait(ctx context.Context) func(op lxd.Operation, err error) error {
	return func(op lxd.Operation, err error) error {
		if err != nil {
			return err
		}

		err = op.WaitContext(ctx)
		if err != nil && ctx.Err() != nil {
			_ = op.Cancel()
			return ctx.Err()
		}

		return err
	}
}

// LeftBehindError says a failed create could not remove what it had made: the instance
// may still exist in LXD, so its record must stay for reconcile to settle.
type LeftBehindError struct {
	Err     error
	Cleanup error
}

func (e *LeftBehindError) Error() string {
	return fmt.Sprintf("%v (and removing what was made failed: %v)", e.Err, e.Cleanup)
}

func (e *LeftBehindError) Unwrap() error {
	return e.Err
}

// CreateInstance creates and starts an instance. Nothing is left half made: if the start
// fails, the instance is deleted again and LXD's error is returned as is; if even that
// fails, the error is a *LeftBehindError.
func CreateInstance(ctx context.Context, conn *Conn, project string, req lxdapi.InstancesPost) error {
	c := conn.raw()
	return create(ctx, c, project, "", req, true)
}

// CreateInstanceOn is CreateInstance on an LXD cluster member or @group (LXD's ?target=;
// empty: where LXD chooses). The create goes through a raw request (operation), which
// does not see a client's UseTarget: the target is passed here.
func CreateInstanceOn(ctx context.Context, conn *Conn, project string, target string, req lxdapi.InstancesPost) error {
	c := conn.raw()
	return create(ctx, c, project, target, req, true)
}

// create makes an instance, and starts it if asked, leaving nothing half made. Nothing is
// read first: LXD refuses a name it has (the create's operation fails), and a failed create
// removes only an instance made since its operation started, so never one that was there
// before, whoever made it; a read before each create cost LXD a request per launch.
func create(ctx context.Context, c lxd.InstanceServer, project string, target string, req lxdapi.InstancesPost, start bool) error {
	err := SafeLimits(req.Config)
	if err != nil {
		return err
	}

	c = c.UseProject(project)
	taken := lxdapi.StatusErrorf(http.StatusConflict, "LXD already has an instance named %q in project %q: pick another name", req.Name, project)
	since := time.Now()
	madeSure := false // the create's operation ended and made the instance
	resp, err := startOperation(ctx, c, project, target, "POST", "/1.0/instances", req)
	switch {
	case err == nil:
		since = startedAt(resp, since)
		err = waitOperation(ctx, c, project, resp, made(req.Name, since))
		madeSure = err == nil
	case lxdapi.StatusErrorCheck(err, http.StatusConflict):
		return taken // an LXD that checks the name before it starts the operation
	case lxdapi.StatusErrorCheck(err):
		return err // LXD refused the request itself: it started nothing
	}

	if err == nil && start {
		err = operation(ctx, c, project, "PUT", statePath(req.Name), lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, status(req.Name, "start"))
	}

	var unknown *OutcomeUnknownError
	if errors.As(err, &unknown) && !madeSure {
		// LXD may still be making the instance: removing it now could find nothing and
		// leave what LXD makes next unrecorded; reconcile settles it once LXD answers.
		return &LeftBehindError{Err: err, Cleanup: errors.New("not tried while the create's outcome is unknown")}
	}

	if err != nil {
		// The create may have got far enough to leave an instance behind; only one made
		// since the create started, and carrying our keys, is removed.
		cleanupErr := removeFailed(context.WithoutCancel(ctx), c, project, req.Name, since)
		if errors.Is(cleanupErr, errMadeBefore) {
			return taken
		}

		if cleanupErr != nil {
			return &LeftBehindError{Err: err, Cleanup: cleanupErr}
		}

		return err
	}

	return nil
}

// startedAt is when LXD started the operation its answer resp describes, by the clock of
// the member that runs it (the clock of the instance's created_at), or else.
func startedAt(resp *lxdapi.Response, orElse time.Time) time.Time {
	var started struct {
		CreatedAt time.Time `json:"created_at"` // only this of the operation, as operationOf
	}

	if json.Unmarshal(resp.Metadata, &started) != nil || started.CreatedAt.IsZero() {
		return orElse
	}

	return started.CreatedAt
}

// errMadeBefore says LXD's instance by a failed create's name was made before the create
// started: LXD refused the name, and the instance is not the create's to remove.
var errMadeBefore = errors.New("the instance was made before this create")

// cleanupFor bounds how long removing what a failed create made may take, and
// cleanupPause the longest pause between tries.
const (
	cleanupFor   = 30 * time.Second
	cleanupPause = 2 * time.Second
)

// removeFailed deletes what a failed create made. A failed start leaves LXD busy with the
// instance for a moment (it runs its own stop: "Instance is busy running a stop
// operation"), so each failed try waits for LXD's operations on the instance and tries
// again, within cleanupFor.
//
// Only an instance made since the create started is removed: an older one by that name
// (LXD refused to make it again) is errMadeBefore.
func removeFailed(ctx context.Context, c lxd.InstanceServer, project string, name string, since time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, cleanupFor)
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		// LXD's operations on the instance end first: a create still running (its wait
		// failed, or the request's answer was lost) would make the instance after a
		// delete that found nothing, leaving it unrecorded (issue 31.b).
		err := waitInstanceOperations(ctx, c.UseProject(project), name)
		if err == nil {
			err = deleteInstance(ctx, c, project, name, since)
			if err == nil || errors.Is(err, errMadeBefore) {
				return err
			}
		}

		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}

		pause = min(2*pause, cleanupPause)
	}
}

// waitInstanceOperations waits for LXD's running operations on an instance of c's project
// to end, or for ctx.
func waitInstanceOperations(ctx context.Context, c lxd.InstanceServer, name string) error {
	ops, err := c.GetOperations()
	if err != nil {
		return fmt.Errorf("list LXD's operations: %w", err)
	}

	for _, op := range ops {
		if op.StatusCode != lxdapi.Running && op.StatusCode != lxdapi.Pending {
			continue
		}

		for _, url := range op.Resources["instances"] {
			if path.Base(strings.SplitN(url, "?", 2)[0]) != name {
				continue
			}

			timeout := 1
			if deadline, ok := ctx.Deadline(); ok {
				timeout = max(1, int(time.Until(deadline).Seconds()))
			}

			_, _, err = c.GetOperationWait(op.ID, timeout)
			if err != nil && !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
				return fmt.Errorf("wait for LXD's operation %s: %w", op.ID, err)
			}

			break
		}
	}

	return nil
}

// DeleteInstance lifts the delete protection, stops and deletes an instance. An instance
// LXD does not have is already deleted. An instance without our keys is not ours, whatever
// its name: it is never touched.
func DeleteInstance(ctx context.Context, conn *Conn, project string, name string) error {
	c := conn.raw()
	return deleteInstance(ctx, c, project, name, time.Time{})
}

// deleteInstance is DeleteInstance of an instance made since a time (zero: any), else
// errMadeBefore.
func deleteInstance(ctx context.Context, c lxd.InstanceServer, project string, name string, since time.Time) error {
	c = c.UseProject(project)
	instance, _, err := c.GetInstance(name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	if err != nil {
		return err
	}

	if instance.CreatedAt.Before(since) {
		return errMadeBefore
	}

	if instance.Config[ConfigDeployment] == "" {
		return lxdapi.StatusErrorf(http.StatusConflict, "LXD instance %q in project %q is not managed by lxd-deployd (no %s key): not deleting it", name, project, ConfigDeployment)
	}

	if instance.Config[configProtection] != "" {
		// No ETag: LXD may be updating the instance's state meanwhile, and only our key
		// changes here.
		put := instance.Writable()
		delete(put.Config, configProtection)
		err = operation(ctx, c, project, "PUT", instancePath(name), put, configured(name, map[string]string{configProtection: ""}))
		if err != nil {
			return fmt.Errorf("lift delete protection: %w", err)
		}
	}

	if instance.StatusCode != lxdapi.Stopped {
		err = operation(ctx, c, project, "PUT", statePath(name), lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, status(name, "stop"))
		if err != nil && !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			// What LXD holds now decides, not the stop's answer: a stop held up by a
			// frozen LXD was answered "The instance is already stopped" and the delete
			// given up, leaving a record of an instance that went on to go (issue 31).
			now, _, readErr := c.GetInstance(name)
			switch {
			case lxdapi.StatusErrorCheck(readErr, http.StatusNotFound):
				return nil
			case readErr != nil || now.StatusCode != lxdapi.Stopped:
				return fmt.Errorf("stop: %w", err)
			}
		}
	}

	err = operation(ctx, c, project, "DELETE", instancePath(name), nil, gone(name))
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	return err
}

// UpdateInstanceState starts, stops, restarts, freezes or unfreezes an instance.
func UpdateInstanceState(ctx context.Context, conn *Conn, project string, name string, state lxdapi.InstanceStatePut) error {
	c := conn.raw()
	return operation(ctx, c, project, "PUT", statePath(name), state, status(name, state.Action))
}
