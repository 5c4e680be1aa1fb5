package main

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instanceHealthAPI serves PUT .../instances/{instance}/health: the report of an instance
// of a shape with a ttl check. Reports arriving together share one transaction (the
// daemon's health.Reports); each is answered once it is recorded. Nothing in LXD.
type instanceHealthAPI struct {
	reports *health.Reports
}

// newInstanceHealthAPI builds the handler and the daemon's one report batcher; the
// checker hears of verdicts that moved (autohealing, events, webhooks).
func newInstanceHealthAPI(cluster *db.Cluster, checker *health.Checker, m *metrics.Metrics) instanceHealthAPI {
	reports := &health.Reports{DB: cluster, Metrics: m}
	if checker != nil {
		reports.Notify = checker.Notify
	}

	return instanceHealthAPI{reports: reports}
}

// report records an instance's own report as the result of its ttl check.
func (a instanceHealthAPI) report(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentInstanceHealthPut
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.HealthReport(req)
	if err != nil {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err))
	}

	result := health.Result{At: time.Now(), Passed: req.Status == api.HealthReportPassing, Output: req.Output}
	if !result.Passed {
		result.ExitCode = 1
	}

	_, err = a.reports.Record(r.Context(), func(ctx context.Context, tx *sql.Tx) (*health.Change, error) {
		return recordReport(ctx, tx, ref, result)
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// recordReport records one report in tx (a batch's); it refuses, before writing anything,
// a report to a shape without a ttl check or from an instance that is not created.
func recordReport(ctx context.Context, tx *sql.Tx, ref refs.InstanceRef, result health.Result) (*health.Change, error) {
	_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
	if err != nil {
		return nil, err
	}

	settings, ok := health.Parse(shape.Health)
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

	return health.Record(ctx, tx, *row, settings, result)
}

// allowInstanceHealth guards an instance's health report: admins and admin keys over TLS
// may report for any instance of the deployment; a governor inside an instance (its JWT
// over its socket or vsock) only for its own instance, as with lifecycle hooks.
func (a access) allowInstanceHealth(r *http.Request) error {
	return a.allowOwnInstance(r, "report only its own health")
}
