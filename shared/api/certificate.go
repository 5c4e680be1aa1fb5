package api

// The trust store reuses LXD's own certificate types (lxdapi.Certificate,
// lxdapi.CertificatesPost, lxdapi.CertificatePut); only the certificate types differ.
const (
	// CertificateTypeClient may use the whole management API.
	CertificateTypeClient = "client"

	// CertificateTypeDeployments may only act through the deployment keys bound to it.
	CertificateTypeDeployments = "deployments"

	// CertificateTypeMetrics may read /1.0/metrics and nothing else, as LXD's: what a
	// Prometheus server scrapes with.
	CertificateTypeMetrics = "metrics"
)
