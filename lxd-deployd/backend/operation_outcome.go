package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// outcome reads from LXD whether what an operation was for holds (an instance exists, runs,
// is gone), for an operation LXD forgot before its result was read. It returns nil when it
// holds, and an error saying what LXD shows otherwise.
type outcome func(ctx context.Context, c DoHTTPer, project string) error

// forgotten settles a wait whose operation LXD no longer knows by reading the outcome.
func forgotten(ctx context.Context, c DoHTTPer, project string, id string, done outcome) error {
	err := done(ctx, c, project)
	if err != nil {
		return fmt.Errorf("LXD forgot operation %s before its result was read, and %w", id, err)
	}

	return nil
}

// readInstance is an instance as LXD holds it (nil when LXD has none by that name).
func readInstance(ctx context.Context, c DoHTTPer, project string, name string) (*lxdapi.Instance, error) {
	resp, err := rawDo(ctx, c, "GET", instancePath(name), project, nil, nil)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil, nil
	}

	if err != nil {
		return nil, err
	}

	var instance lxdapi.Instance
	err = json.Unmarshal(resp.Metadata, &instance)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's instance %s: %w", name, err)
	}

	return &instance, nil
}

// held is an instance LXD holds, or an error when it has none by that name.
func held(ctx context.Context, c DoHTTPer, project string, name string) (*lxdapi.Instance, error) {
	instance, err := readInstance(ctx, c, project, name)
	if err == nil && instance == nil {
		err = fmt.Errorf("LXD has no instance %q", name)
	}

	return instance, err
}

// made is the outcome of a create whose operation LXD started at since (by the clock of
// the member that ran it): LXD has the instance, made since. An older instance by that name
// is one LXD refused to make again, not this create's.
func made(name string, since time.Time) outcome {
	return func(ctx context.Context, c DoHTTPer, project string) error {
		instance, err := held(ctx, c, project, name)
		if err == nil && instance.CreatedAt.Before(since) {
			err = fmt.Errorf("LXD's instance %q was there before this create (made %s)", name, instance.CreatedAt.Format(time.RFC3339))
		}

		return err
	}
}

// gone is the outcome of a delete: LXD has no such instance.
func gone(name string) outcome {
	return func(ctx context.Context, c DoHTTPer, project string) error {
		instance, err := readInstance(ctx, c, project, name)
		if err != nil {
			return err
		}

		if instance != nil {
			return fmt.Errorf("LXD still has instance %q", name)
		}

		return nil
	}
}

// status is the outcome of a state change: the instance is in the state the action leads
// to (an action with no lasting state has no outcome to read).
func status(name string, action string) outcome {
	want := map[string]lxdapi.StatusCode{"start": lxdapi.Running, "restart": lxdapi.Running, "unfreeze": lxdapi.Running, "stop": lxdapi.Stopped, "freeze": lxdapi.Frozen}[action]
	if want == 0 {
		return nil
	}

	return func(ctx context.Context, c DoHTTPer, project string) error {
		instance, err := held(ctx, c, project, name)
		if err != nil {
			return err
		}

		if instance.StatusCode != want {
			return fmt.Errorf("instance %q is %s in LXD, not %s", name, instance.StatusCode, want)
		}

		return nil
	}
}

// configured is the outcome of a config update: every key of config has its value in LXD
// (an empty value: the key is unset).
func configured(name string, config map[string]string) outcome {
	return func(ctx context.Context, c DoHTTPer, project string) error {
		instance, err := held(ctx, c, project, name)
		if err != nil {
			return err
		}

		for key, value := range config {
			if instance.Config[key] != value {
				return fmt.Errorf("instance %q has %s=%q in LXD, not %q", name, key, instance.Config[key], value)
			}
		}

		return nil
	}
}
