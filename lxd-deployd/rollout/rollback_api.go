package rollout

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// What the revisions API (.../shapes/{shape}/revisions and .../rollback) asks of this
// package: package main parses the request and answers.

// Catalog is what a rollback asks of LXD: whether it still has an image and profiles
// (*backend.LXD).
type Catalog interface {
	Available() error
	Image(project string, fingerprint string) (*lxdapi.Image, error)
	ImageAlias(project string, alias string) (*lxdapi.ImageAliasesEntry, error)
	Profile(project string, name string) (*lxdapi.Profile, error)
}

// Revisions reads revision n of the shape ref names and, when diff is not 0, revision diff
// to compare it with (other is nil otherwise).
func Revisions(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, n int, diff int) (rev *api.DeploymentShapeRevision, other *api.DeploymentShapeRevision, err error) {
	err = refs.InShapeTx(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		rev, err = db.GetRevision(ctx, tx, shape.ID, n)
		if err != nil || diff == 0 {
			return err
		}

		other, err = db.GetRevision(ctx, tx, shape.ID, diff)
		return err
	})

	return rev, other, err
}

// errDryRun rolls back the transaction of a dry-run rollback.
var errDryRun = errors.New("dry run")

// RollbackAPI sets a shape back to an earlier revision (a new revision: history moves
// forward; Rollback). It checks first that LXD still has the image and profiles that
// revision names. A dry run answers the plan (DryRun set) and changes nothing.
func RollbackAPI(ctx context.Context, cluster *db.Cluster, lxd Catalog, ref refs.ShapeRef, req api.DeploymentShapeRollbackPost, dryRun bool, by api.DeploymentRequestor) (api.DeploymentShapeRollback, int64, error) {
	var result api.DeploymentShapeRollback
	err := validate.Notes(req.Notes)
	if err != nil {
		return result, 0, badRequest(err)
	}

	if req.Revision < 0 {
		return result, 0, lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d must be a revision number, or 0 for the one before the latest", req.Revision)
	}

	template := req.Template == nil || *req.Template
	if !template && !req.Scaling {
		return result, 0, lxdapi.StatusErrorf(http.StatusBadRequest, "nothing to roll back: set template, scaling or both to true")
	}

	// Read the revision and check it against LXD before changing anything.
	var old *api.DeploymentShapeRevision
	err = refs.InShapeTx(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		if req.Revision == 0 {
			req.Revision = shape.Revision - 1
			if req.Revision < 1 {
				return lxdapi.StatusErrorf(http.StatusBadRequest, "shape %s has only revision %d: there is nothing before it to roll back to", shape.Name, shape.Revision)
			}
		}

		old, err = db.GetRevision(ctx, tx, shape.ID, req.Revision)
		return err
	})
	if err != nil {
		return result, 0, err
	}

	if template {
		err = CheckLXDHas(lxd, ref.Project, PinnedTemplate(*old), req.Revision)
		if err != nil {
			return result, 0, err
		}
	}

	var deploymentID int64
	err = refs.InShapeTx(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		result, err = Rollback(ctx, tx, shape, req, template, by)
		if err == nil && dryRun {
			return errDryRun // the plan is the rollback itself, undone
		}

		return err
	})
	if dryRun && errors.Is(err, errDryRun) {
		result.DryRun = true
		result.Message = "dry run, nothing changed: " + result.Message
		return result, deploymentID, nil
	}

	return result, deploymentID, err
}

// CheckLXDHas refuses a rollback to a template whose image or profiles LXD no longer has.
func CheckLXDHas(lxd Catalog, project string, t lxdapi.InstancesPost, revision int) error {
	err := lxd.Available()
	if err != nil {
		return err
	}

	source := t.Source
	if source.Type == "image" && source.Server == "" {
		// LXD makes instances from the fingerprint when there is one (a pinned image).
		image := source.Alias
		switch {
		case source.Fingerprint != "":
			image = source.Fingerprint
			_, err = lxd.Image(project, source.Fingerprint)
		case source.Alias != "":
			_, err = lxd.ImageAlias(project, source.Alias)
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d uses image %q, which LXD no longer has: import it again, or roll back to another revision", revision, image)
		}

		if err != nil {
			return err
		}
	}

	for _, profile := range t.Profiles {
		_, err = lxd.Profile(project, profile)
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d uses profile %q, which LXD no longer has: create it again, or roll back to another revision", revision, profile)
		}

		if err != nil {
			return err
		}
	}

	return nil
}
