package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
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

	err = a.reports.Report(r.Context(), ref, req)
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// allowInstanceHealth guards an instance's health report: admins and admin keys over TLS
// may report for any instance of the deployment; a governor inside an instance (its JWT
// over its socket or vsock) only for its own instance, as with lifecycle hooks.
func (a access) allowInstanceHealth(r *http.Request) error {
	return a.allowOwnInstance(r, "report only its own health")
}
