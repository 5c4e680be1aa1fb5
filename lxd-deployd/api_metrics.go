package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// metricsAPI serves /1.0/metrics.
type metricsAPI struct {
	metrics *metrics.Metrics
}

// get writes the exposition; the library negotiates OpenMetrics or the text format from
// the Accept header, as Prometheus expects.
func (a metricsAPI) get(r *http.Request) response.Response {
	return response.ManualResponse(func(w http.ResponseWriter) error {
		a.metrics.Handler().ServeHTTP(w, r)
		return nil
	})
}

// allowMetrics lets admins and metrics certificates through, as LXD does.
func allowMetrics(r *http.Request) error {
	caller := auth.CallerFromContext(r.Context())
	if caller.IsAdmin() || (caller.Trusted && caller.CertificateType == api.CertificateTypeMetrics) {
		return nil
	}

	if !caller.Trusted {
		return rest.Forbidden("not trusted: scrape with a certificate of type metrics (lxd-deploy config trust add --type metrics)")
	}

	return rest.Forbidden("a %s certificate may not read metrics: use a metrics or client certificate", caller.CertificateType)
}
