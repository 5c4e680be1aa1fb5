package health

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Report records an instance's own report as the result of its ttl check (RecordReport),
// in a batch with the reports arriving together; a report that is not valid is a 400.
func (rs *Reports) Report(ctx context.Context, ref refs.InstanceRef, req api.DeploymentInstanceHealthPut) error {
	err := validate.HealthReport(req)
	if err != nil {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
	}

	result := ReportResult(req, time.Now())
	_, err = rs.Record(ctx, func(ctx context.Context, tx *sql.Tx) (*Change, error) {
		return RecordReport(ctx, tx, ref, result)
	})

	return err
}

// ReportResult is an instance's own report (PUT .../instances/{instance}/health) as the
// result of its ttl check at now: a failing report counts as exit code 1.
func ReportResult(req api.DeploymentInstanceHealthPut, now time.Time) Result {
	result := Result{At: now, Passed: req.Status == api.HealthReportPassing, Output: req.Output}
	if !result.Passed {
		result.ExitCode = 1
	}

	return result
}

// RecordReport records one report in tx (a batch's, Reports); it refuses, before writing
// anything, a report to a shape without a ttl check or from an instance that is not
// created.
func RecordReport(ctx context.Context, tx *sql.Tx, ref refs.InstanceRef, result Result) (*Change, error) {
	_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
	if err != nil {
		return nil, err
	}

	settings, ok := Parse(shape.Health)
	if !ok || settings.Kind != api.HealthKindTTL {
		return nil, lxdapi.StatusErrorf(http.StatusConflict, "shape %s has no ttl health check: set health.ttl on the shape for its instances to report their own health", shape.Name)
	}

	row, err := db.GetInstance(ctx, tx, shape.ID, ref.Instance)
	if err != nil {
		return nil, err
	}

	if row.State != db.InstanceCreated {
		return nil, lxdapi.StatusErrorf(http.StatusConflict, "instance %s is %s: only a created instance reports its health", row.Name, row.State)
	}

	return Record(ctx, tx, *row, settings, result)
}
