package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/canonical/lxd/shared"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/scheduler"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/ui"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// config is the daemon's configuration, from flags.
type config struct {
	dataDir           string
	httpsAddress      string
	lxdSocket         string
	clusterAddress    string
	clusterJoin       []string
	clusterName       string
	clusterJoinToken  string
	joinTokenExpiry   time.Duration
	lxdPollInterval   time.Duration
	reconcileInterval time.Duration
	vsockPort         uint32

	// templateRegistries maps "<host>/<owner>/<repo>" to an http(s) base URL or a directory:
	// the only places the daemon fetches templates from.
	templateRegistries map[string]string
	templateDefault    string

	// templateMaxMemory is the memory one expansion's child process may allocate
	// (template.max_memory).
	templateMaxMemory int64

	// webhookAllowedNetworks limit where webhooks are delivered (empty: the default policy).
	webhookAllowedNetworks []string
	// privateLXD, when set, is the LXD_DIR of a private LXD to run when no LXD answers
	// (make run sets it; see private_lxd.go).
	privateLXD string

	// pprof serves Go's /debug/pprof/ on the unix socket (root only, like the rest of it):
	// the heap and CPU profiles of a running daemon, for benchmarks and operators.
	pprof bool

	// testClockFile, for tests only, holds the time the scheduler reads instead of the
	// clock's (schedule.go).
	testClockFile string

	// frontDoor is the front door mode (front_door.go), haproxySocket the operator's
	// HAProxy admin socket in haproxy mode.
	frontDoor     string
	haproxySocket string
}

// daemon wires the database, the LXD connection and the API listeners together.
type daemon struct {
	config config
	logger *slog.Logger

	db         *db.Cluster
	lxd        *backend.LXD
	cert       *shared.CertInfo
	events     *events.Server
	ops        *operations.Manager
	inflight   *fleet.Inflight
	rollouts   *rollout.Engine
	fleet      *fleet.Fleet
	reporter   *reporter.Reporter
	governors  *governor.Listener
	tokens     *auth.TokenVerifier
	webhooks   *webhooks.Dispatcher
	metrics    *metrics.Metrics
	privateLXD *privatelxd.LXD
	member     string
	identity   *clusterIdentity
	leases     *lease.Manager
	life       *instanceCare
	scheduler  *scheduler.Scheduler // scheduled actions (schedule.go)
	door       frontdoor.Door       // the front door (front_door.go; nil: none)
	doors      *doorkeeper.Keeper   // keeps the door in step with the endpoints
	holds      *waker.Set           // holds of shapes at zero (wake.go; nil: no private door)
	servers    []*http.Server
	conns      *connLimits // the HTTPS connection budgets (conn_limits.go)
	cancel     context.CancelFunc
	background sync.WaitGroup

	// quit stops the daemon as SIGTERM would (a member removed from the cluster).
	quit context.CancelFunc

	// scheduleClock is the scheduler's clock (nil: time.Now; a test's: schedule.go).
	scheduleClock scheduler.Clock
}

type listenerKey struct{}

type governorConnKey struct{}

type unixPeerKey struct{}

// start opens the database, connects to LXD in the background and starts serving.
func (d *daemon) start(ctx context.Context) error {
	err := prepareDataDir(d.config.dataDir)
	if err != nil {
		return err
	}

	d.cert, err = serverCertificate(d.config.dataDir)
	if err != nil {
		return err
	}

	err = prepareCluster(ctx, &d.config)
	if err != nil {
		return err
	}

	clusterTLS, err := clusterCertificate(d.config)
	if err != nil {
		return err
	}

	// Files just generated get their modes too, whatever the library wrote them with.
	err = fixFileModes(d.config.dataDir)
	if err != nil {
		return err
	}

	if clusterTLS != nil {
		d.identity, err = loadClusterIdentity(d.config.dataDir)
		if err != nil {
			return err
		}
	}

	options := db.Options{Address: d.config.clusterAddress, Cluster: d.config.clusterJoin, Logger: d.logger}
	if d.identity != nil {
		options.Credentials = d.identity // rotatable: cluster_rotate.go
	}

	d.db, err = db.Open(ctx, filepath.Join(d.config.dataDir, "database"), options)
	if err != nil {
		return err
	}

	err = d.choosePrivateLXD(ctx)
	if err != nil {
		return err
	}

	d.member, err = d.registerMember(ctx)
	if err != nil {
		return err
	}

	location := d.member
	d.leases = lease.NewManager(d.db, d.member, lease.DefaultTTL, d.logger)
	runCtx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.events = events.NewServer(d.logger, location)
	d.logger = withLoggingEvents(d.logger, d.events)
	d.lxd = backend.NewLXD(d.config.lxdSocket, d.logger)
	d.ops = operations.NewManager(d.logger, d.events, location)
	err = d.shareOperations(ctx)
	if err != nil {
		return err
	}

	d.inflight = fleet.NewInflight()
	d.tokens = auth.NewSharedTokenVerifier(replayStore{db: d.db})
	d.governors, err = governor.NewListener(filepath.Join(d.config.dataDir, "governor"))
	if err != nil {
		return err
	}

	d.webhooks = webhooks.NewDispatcher(d.db, d.db.Address(), d.logger)
	allowed, err := webhooks.ParseNetworks(d.config.webhookAllowedNetworks)
	if err != nil {
		return fmt.Errorf("--webhook-allowed-networks: %w", err)
	}

	d.webhooks.SetDestinationPolicy(webhooks.DestinationPolicy{Allowed: allowed})
	d.startMetrics()
	d.scheduleClock, err = scheduleClock(d.config.testClockFile, d.logger)
	if err != nil {
		return err
	}

	d.door, err = openFrontDoor(d.config, d.logger)
	if err != nil {
		return err
	}

	d.wire()
	d.startInstanceCare(runCtx)
	// Every member keeps its own front door (doc/traffic.md).
	d.goBackground(func() { d.doors.Run(runCtx, doorInterval) })
	// Every member runs the rollout engine; each rollout is claimed by one of them at a time.
	d.goBackground(func() { d.rollouts.Run(runCtx, time.Second) })
	metrics := webhooks.NewCollector(d.db, d.lxd, d.webhooks, d.logger).WithTraffic(d.doors.FrontendStats)
	d.goBackground(func() { d.lxd.Run(runCtx, d.config.lxdPollInterval) })
	d.startLeasedWork(runCtx, metrics)
	d.startSchedule(runCtx)

	handlers := append(endpoints(d.apis()), clusterEndpoints(d.clusterAPI())...)
	d.conns = newConnLimitsWith(defaultConnBudgets, d.logger)
	router := newRouter(handlers, d.conns.authenticated(d.authenticate), d.logger, false)

	unixListener, err := listenUnix(filepath.Join(d.config.dataDir, "unix.socket"))
	if err != nil {
		return err
	}

	d.serve(unixListener, withPprof(router, d.config.pprof), auth.ProtocolUnix)
	d.logger.Info("listening", "socket", unixListener.Addr().String())

	if d.config.httpsAddress != "" {
		tcpListener, err := net.Listen("tcp", d.config.httpsAddress)
		if err != nil {
			return fmt.Errorf("listen on %s: %w (use --https-address to choose another, or \"\" to disable HTTPS)", d.config.httpsAddress, err)
		}

		d.serve(tls.NewListener(tcpListener, d.tlsConfig()), router, auth.ProtocolTLS)
		d.logger.Info("listening", "https", tcpListener.Addr().String(), "fingerprint", d.cert.Fingerprint())
	}

	return d.startGovernorTransports(ctx, handlers)
}

// startGovernorTransports serves the governor API to governors inside instances: the
// per-container sockets (restored for existing instances) and vsock.
func (d *daemon) startGovernorTransports(ctx context.Context, handlers []endpoint) error {
	err := restoreGovernorSockets(ctx, d.db, d.governors)
	if err != nil {
		return err
	}

	if d.config.vsockPort != 0 {
		err = d.governors.ListenVsock(d.config.vsockPort)
		if err != nil {
			// VMs are optional; containers still have their sockets.
			d.logger.Warn("vsock unavailable: governors in VMs cannot connect", "err", err)
		} else {
			d.logger.Info("listening", "vsock_port", d.config.vsockPort)
		}
	}

	d.serve(d.governors, newRouter(handlers, d.authenticate, d.logger, true), auth.ProtocolGovernor)
	return nil
}

// goBackground runs f until the daemon stops.
func (d *daemon) goBackground(f func()) {
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		f()
	}()
}

// apis builds each resource's handler set with only the dependencies it uses.
func (d *daemon) apis() apis {
	l := d.reporter
	access := access{db: d.db}
	return apis{
		server: serverAPI{
			lxd:             d.lxd,
			certificatePEM:  string(d.cert.PublicKey()),
			fingerprint:     d.cert.Fingerprint(),
			addresses:       d.addresses,
			databaseAddress: d.db.Address(),
			members:         d.db.Members,
			lxdPrivate:      d.privateLXD != nil,
		},
		certificates: certificatesAPI{db: d.db, serverFingerprint: d.cert.Fingerprint(), addresses: d.addresses},
		deployments:  deploymentsAPI{db: d.db, lxd: d.lxd, sockets: d.governors, reporter: l, fetcher: d.templateFetcher(), engine: d.templateEngine()},
		keys:         keysAPI{db: d.db, reporter: l},
		shapes:       shapesAPI{db: d.db, lxd: d.lxd, sockets: d.governors, reporter: l},
		instances:    instancesAPI{db: d.db, lxd: d.lxd, ops: d.ops, fleet: d.fleet, reporter: l, usage: newUsageCache(d.usageFetched)},
		placement:    placementAPI{db: d.db, fleet: d.fleet},
		schedule:     scheduleAPI{db: d.db, scheduler: d.scheduler},
		endpoints:    endpointsAPI{db: d.db, lxd: d.lxd},
		health:       newInstanceHealthAPI(d.db, d.life.checker, d.metrics),
		operations:   operationsAPI{ops: d.ops, events: d.events, access: access, cluster: d.clusterOps()},
		webhooks:     webhooksAPI{db: d.db, dispatcher: d.webhooks, metrics: d.metrics},
		metrics:      metricsAPI{metrics: d.metrics},
		revisions:    revisionsAPI{db: d.db, lxd: d.lxd, reporter: l},
		rollouts:     rolloutsAPI{db: d.db, lxd: d.lxd, ops: d.ops, engine: d.rollouts, reporter: l},
		resize:       resizeAPI{db: d.db, lxd: d.lxd, ops: d.ops, reporter: l, inPlace: d.fleet.InPlace},
		ui:           ui.API{DB: d.db, Addresses: d.addresses},
		access:       access,
		governorHold: governorHoldAPI{db: d.db},
	}
}

// templateFetcher returns the fetcher for the configured template registries, or nil: the
// daemon fetches from nowhere else (no GitHub fallback, no plain URLs outside them).
func (d *daemon) templateFetcher() templates.Fetcher {
	if len(d.config.templateRegistries) == 0 {
		return nil
	}

	return &registry.Fetcher{
		Registries: d.config.templateRegistries,
		Default:    d.config.templateDefault,
		Client:     &http.Client{Timeout: 30 * time.Second},
	}
}

// withPprof adds Go's profiles under /debug/pprof/ to the unix socket's routes when the
// operator asked for them (--debug-pprof): never on HTTPS or a governor transport.
func withPprof(router http.Handler, enabled bool) http.Handler {
	if !enabled {
		return router
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", router)
	return mux
}

// serve runs an HTTP server on the listener, tagging every request with its protocol.
func (d *daemon) serve(listener net.Listener, handler http.Handler, protocol string) {
	listener = envelopeListener{listener}
	server := &http.Server{
		Handler:           withTLSState(observe(handler, d.logger, d.metrics)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(d.logger.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), listenerKey{}, protocol)
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			c = unwrapConn(c)
			tc, ok := c.(*tls.Conn)
			if ok {
				return context.WithValue(ctx, tlsConnKey{}, tc)
			}

			conn, ok := c.(*governor.Conn)
			if ok {
				return context.WithValue(ctx, governorConnKey{}, conn)
			}

			if protocol == auth.ProtocolUnix {
				return context.WithValue(ctx, unixPeerKey{}, unixPeerName(c))
			}

			return ctx
		},
	}

	if protocol == auth.ProtocolTLS {
		d.conns.checkFileLimit()
		server.ConnState = d.conns.connState
		connContext := server.ConnContext
		server.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return connContext(d.conns.withConn(ctx, c), c)
		}
	}

	d.servers = append(d.servers, server)
	go func() {
		err := server.Serve(listener)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("API server stopped", "protocol", protocol, "err", err)
		}
	}()
}

// authenticate turns a request into a caller: the unix socket is an admin, a TLS peer is
// another member or whoever its certificate is in the trust store (cluster_auth.go).
func (d *daemon) authenticate(r *http.Request) (*auth.Caller, error) {
	protocol, _ := r.Context().Value(listenerKey{}).(string)
	switch protocol {
	case auth.ProtocolUnix:
		name, _ := r.Context().Value(unixPeerKey{}).(string)
		return &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true, Name: name}, nil
	case auth.ProtocolTLS:
		// Browsers attach client certificates and cookies whatever page asks (doc/ui.md).
		err := auth.CheckBrowserOrigin(r)
		if err != nil {
			return nil, err
		}

		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return ui.Authenticate(r, d.db, time.Now())
		}

		return d.authenticateTLS(r)
	case auth.ProtocolGovernor:
		conn, _ := r.Context().Value(governorConnKey{}).(*governor.Conn)
		return authenticateGovernor(r, conn, d.db, d.lxd, d.tokens)
	}

	return &auth.Caller{}, nil
}

// tlsConfig is LXD's: TLS 1.3 only, client certificates requested but checked by
// fingerprint against the trust store rather than by the TLS stack.
func (d *daemon) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		ClientAuth:   tls.RequestClientCert,
		Certificates: []tls.Certificate{d.cert.KeyPair()},
		// Members and joining daemons ask for the cluster's name and get its certificate.
		GetCertificate: d.identity.serverCertificate,
	}
}

// addresses lists the host:port pairs the HTTPS API can be reached on, for trust tokens and
// GET /1.0; a wildcard listen address expands to every address of the machine.
func (d *daemon) addresses() []string {
	if d.config.httpsAddress == "" {
		return []string{}
	}

	host, port, err := net.SplitHostPort(d.config.httpsAddress)
	if err != nil {
		return []string{d.config.httpsAddress}
	}

	ip := net.ParseIP(strings.Trim(host, "[]"))
	if host != "" && (ip == nil || !ip.IsUnspecified()) {
		return []string{d.config.httpsAddress}
	}

	ifaceAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return []string{}
	}

	addresses := []string{}
	for _, addr := range ifaceAddrs {
		ipNet, ok := addr.(*net.IPNet)
		if !ok || ipNet.IP.IsLinkLocalUnicast() {
			continue
		}

		addresses = append(addresses, net.JoinHostPort(ipNet.IP.String(), port))
	}

	return addresses
}

// serverCertificate loads the server's key pair, generating an ECDSA P-384 one with the
// host's names as SANs on first start, as LXD does.
func serverCertificate(dataDir string) (*shared.CertInfo, error) {
	certFile := filepath.Join(dataDir, "server.crt")
	keyFile := filepath.Join(dataDir, "server.key")
	err := shared.FindOrGenCert(certFile, keyFile, false, shared.CertOptions{AddHosts: true})
	if err != nil {
		return nil, fmt.Errorf("generate server certificate: %w", err)
	}

	return shared.KeyPairAndCA(dataDir, "server", shared.CertServer, shared.CertOptions{})
}

// listenUnix listens on the admin socket (mode 0660, root: full access, like LXD's). A
// socket left by a dead daemon is replaced; one a live daemon answers on is not.
func listenUnix(path string) (net.Listener, error) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = conn.Close()
		return nil, fmt.Errorf("another daemon is listening on %s: stop it first", path)
	}

	err = os.Remove(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}

	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}

	err = os.Chmod(path, 0o660)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("set permissions of %s: %w", path, err)
	}

	return listener, nil
}
