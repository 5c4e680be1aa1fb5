// Package apply is the templated-config apply engine (doc/templates.md): a deployment's
// create or PUT, or a manifest's rollback, may carry a config in "template"; the engine
// expands it before any transaction (Expand), plans the shape changes against the database
// (Engine.Plan), and applies them together with a new manifest in one transaction
// (Config.Apply, run in the transaction that also writes the deployment). Only forced
// deletes of instances happen before it (Engine.DeleteDropped, through the fleet), since
// LXD is no part of the database. Package main parses the requests, calls the engine and
// answers; the engine reaches the rest of the daemon only through shims.go.
package apply

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Apply plans the config inside the transaction and applies it: deletes, updates, creates,
// and the manifest recording it. It is safe to run again when the transaction is retried.
// A nil config applies nothing.
func (c *Config) Apply(ctx context.Context, tx *sql.Tx, deploymentID int64) error {
	if c == nil {
		return nil
	}

	p, err := c.plan(ctx, tx, deploymentID)
	if err != nil {
		return err
	}

	// The manifest is named first: the shape revisions it makes say "apply manifest-N".
	name, err := db.CreateManifest(ctx, tx, deploymentID, api.DeploymentManifest{
		Cause:          c.cause,
		InputConfig:    c.input,
		Imports:        c.imports,
		ExpandedConfig: c.config,
		Layout:         c.layout,
	})
	if err != nil {
		return err
	}

	args := rollout.RevisionArgs{Cause: rollout.CauseApplyManifest(name), By: c.by}
	c.revised = map[string]rollout.Revised{}
	for _, d := range p.delete {
		if d.instances > 0 {
			return lxdapi.StatusErrorf(http.StatusConflict, "shape %q is no longer in the config and still has %d instances: delete them first, or apply with force to delete them with it", d.name, d.instances)
		}

		err = db.DeleteShape(ctx, tx, d.id)
		if err != nil {
			return err
		}
	}

	for _, u := range p.update {
		before, err := rollout.ShapeByID(ctx, tx, deploymentID, u.id)
		if err != nil {
			return err
		}

		err = db.UpdateShape(ctx, tx, u.id, u.put)
		if err != nil {
			return err
		}

		c.revised[u.before.Name], err = rollout.RecordRevision(ctx, tx, deploymentID, u.id, before, u.put, args)
		if err != nil {
			return err
		}
	}

	for _, cr := range p.create {
		id, err := db.CreateShape(ctx, tx, deploymentID, cr)
		if err != nil {
			return err
		}

		_, err = rollout.RecordRevision(ctx, tx, deploymentID, id, nil, cr.DeploymentShapePut, args)
		if err != nil {
			return err
		}
	}

	c.done = &p
	c.manifest = name
	return nil
}
