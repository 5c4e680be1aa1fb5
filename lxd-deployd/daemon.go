package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/canonical/lxd/shared"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/datadir"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/listen"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/observed"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/scheduler"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/task"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/ui"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
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
	// (make run sets it; see backend.ChoosePrivate).
	privateLXD string

	// pprof serves Go's /debug/pprof/ on the unix socket (root only, like the rest of it):
	// the heap and CPU profiles of a running daemon, for benchmarks and operators.
	pprof bool

	// testClockFile, for tests only, holds the time the scheduler reads instead of the
	// clock's (scheduler.FileClock).
	testClockFile string

	// frontDoor is the front door mode (doorkeeper.OpenDoor), haproxySocket the operator's
	// HAProxy admin socket in haproxy mode.
	frontDoor     string
	haproxySocket string
}

// opened is what the daemon opens before it builds anything (open): its certificates, the
// database (a cluster joined or not), its member name, the LXD to use (a private one run,
// maybe) and the governor sockets' directory. Tests open their own (an in-memory dqlite, no
// LXD) and build the daemon from them with the same newDaemon.
type opened struct {
	// config is the configuration as opened: the LXD socket that answered, the cluster
	// flags a join token filled in.
	config config

	db         *db.Cluster
	cert       *shared.CertInfo
	identity   *cluster.Identity // nil outside a cluster
	member     string
	governors  *governor.Listener
	privateLXD *privatelxd.LXD // nil: none runs
	door       frontdoor.Door  // the front door (doorkeeper.OpenDoor; nil: none)
}

// daemon wires the database, the LXD connection and the API listeners together. newDaemon
// builds every part of it; start only starts them.
type daemon struct {
	*opened

	// logger also sends what it logs as "logging" events (logging.go).
	logger *slog.Logger

	lxd       *backend.LXD
	events    *events.Server
	ops       *operations.Manager
	inflight  *fleet.Inflight
	rollouts  *rollout.Engine
	fleet     *fleet.Fleet
	checker   *health.Checker
	reporter  *reporter.Reporter
	tokens    *auth.TokenVerifier
	webhooks  *webhooks.Dispatcher
	metrics   *metrics.Metrics
	leases    *lease.Manager
	scheduler *scheduler.Scheduler // scheduled actions (schedule.go)
	conns     *rest.ConnLimits     // the HTTPS connection budgets (rest/conn_limits.go)
	doors     *doorkeeper.Keeper   // keeps the door in step with the endpoints
	snapshot  *observed.Snapshot   // what the daemon observed of LXD: usage (kept fresh in the background) and instance listings

	// tasks are the background loops (wire.go), started by start and stopped by stop.
	tasks task.Group

	// stopping closes when the daemon begins to stop: operations that only wait end then.
	stopping chan struct{}

	// servers are the API servers start listens with.
	servers []*http.Server

	// quit stops the daemon as SIGTERM would (a member removed from the cluster).
	quit context.CancelFunc
}

// open prepares the data directory and opens what the daemon is built on. On failure it
// closes what it opened.
func open(ctx context.Context, cfg config, logger *slog.Logger) (*opened, error) {
	o := &opened{config: cfg}
	err := o.openAll(ctx, logger)
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), startFailureWait)
		defer cancel()
		_ = o.close(closeCtx, logger)
		return nil, err
	}

	return o, nil
}

// openAll opens each part in turn, stopping at the first that fails.
func (o *opened) openAll(ctx context.Context, logger *slog.Logger) error {
	err := datadir.Prepare(o.config.dataDir)
	if err != nil {
		return err
	}

	o.cert, err = datadir.ServerCertificate(o.config.dataDir)
	if err != nil {
		return err
	}

	err = prepareCluster(ctx, &o.config)
	if err != nil {
		return err
	}

	clusterTLS, err := cluster.Certificate(o.config.dataDir, len(o.config.clusterJoin) > 0, o.config.clusterAddress)
	if err != nil {
		return err
	}

	// Files just generated get their modes too, whatever the library wrote them with.
	err = datadir.FixModes(o.config.dataDir)
	if err != nil {
		return err
	}

	if clusterTLS != nil {
		o.identity, err = cluster.LoadIdentity(o.config.dataDir)
		if err != nil {
			return err
		}
	}

	options := db.Options{Address: o.config.clusterAddress, Cluster: o.config.clusterJoin, Logger: logger}
	if o.identity != nil {
		options.Credentials = o.identity // rotatable: cluster/rotate.go
	}

	o.db, err = db.Open(ctx, filepath.Join(o.config.dataDir, "database"), options)
	if err != nil {
		return err
	}

	o.config.lxdSocket, o.privateLXD, err = backend.ChoosePrivate(ctx, o.config.lxdSocket, o.config.privateLXD, logger)
	if err != nil {
		return err
	}

	o.member, err = o.registerMember(ctx)
	if err != nil {
		return err
	}

	o.governors, err = governor.NewListener(filepath.Join(o.config.dataDir, "governor"))
	if err != nil {
		return err
	}

	o.door, err = doorkeeper.OpenDoor(o.config.frontDoor, o.config.dataDir, o.config.haproxySocket, logger)
	return err
}

// close closes what open opened, in the order stop needs: the governor sockets, then the
// database (its role handed over first), then the private LXD. Only a failure to close
// something is an error; a handover that cannot finish is logged.
func (o *opened) close(ctx context.Context, logger *slog.Logger) error {
	var errs []error
	if o.governors != nil {
		_ = o.governors.Close()
	}

	// The door's load balancer outlives the daemon: the data path never passes through it,
	// and a restarted daemon adopts it (doc/traffic.md).
	if o.door != nil {
		_ = o.door.Close()
	}

	if o.db != nil {
		err := o.db.Handover(ctx)
		if err != nil {
			logger.Warn(err.Error())
		}

		err = o.db.Close(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}

	// The private LXD's directory is kept for the next run.
	if o.privateLXD != nil {
		errs = append(errs, o.privateLXD.Stop())
		o.privateLXD = nil
	}

	return errors.Join(errs...)
}

// start settles what the last run left, starts the background loops and serves.
func (d *daemon) start(ctx context.Context) error {
	err := d.shareOperations(ctx)
	if err != nil {
		return err
	}

	d.tasks.Start(context.Background())
	handlers := append(endpoints(d.apis()), clusterEndpoints(d.clusterAPI())...)
	router := rest.NewRouter(handlers, d.conns.Authenticated(d.authenticate), d.logger, false)

	unixListener, err := listen.Unix(filepath.Join(d.config.dataDir, "unix.socket"))
	if err != nil {
		return err
	}

	d.serve(unixListener, listen.WithPprof(router, d.config.pprof), auth.ProtocolUnix)
	d.logger.Info("listening", "socket", unixListener.Addr().String())

	if d.config.httpsAddress != "" {
		tcpListener, err := net.Listen("tcp", d.config.httpsAddress)
		if err != nil {
			return fmt.Errorf("listen on %s: %w (use --https-address to choose another, or \"\" to disable HTTPS)", d.config.httpsAddress, err)
		}

		// Members and joining daemons ask for the cluster's name and get its certificate.
		tlsConfig := listen.TLSConfig(d.cert.KeyPair(), d.identity.ServerCertificate)
		d.serve(tls.NewListener(tcpListener, tlsConfig), router, auth.ProtocolTLS)
		d.logger.Info("listening", "https", tcpListener.Addr().String(), "fingerprint", d.cert.Fingerprint())
	}

	return d.startGovernorTransports(ctx, handlers)
}

// startGovernorTransports serves the governor API to governors inside instances: the
// per-container sockets (restored for existing instances) and vsock.
func (d *daemon) startGovernorTransports(ctx context.Context, handlers []rest.Endpoint) error {
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

	d.serve(d.governors, rest.NewRouter(handlers, d.authenticate, d.logger, true), auth.ProtocolGovernor)
	return nil
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
		deployments:  deploymentsAPI{db: d.db, fleet: d.fleet, reporter: l, configs: d.applyEngine()},
		keys:         keysAPI{db: d.db, reporter: l},
		shapes:       shapesAPI{db: d.db, lxd: d.lxd, fleet: d.fleet, reporter: l},
		instances:    instancesAPI{db: d.db, lxd: d.lxd, fleet: d.fleet, usage: d.snapshot},
		placement:    placementAPI{fleet: d.fleet},
		schedule:     scheduleAPI{db: d.db, scheduler: d.scheduler},
		endpoints:    endpointsAPI{db: d.db, lxd: d.lxd, stats: d.doors.FrontendStats},
		health:       newInstanceHealthAPI(d.db, d.checker, d.metrics),
		operations:   operationsAPI{ops: d.ops, events: d.events, access: access, cluster: d.clusterOps()},
		webhooks:     webhooksAPI{db: d.db, dispatcher: d.webhooks, metrics: d.metrics},
		metrics:      metricsAPI{metrics: d.metrics},
		revisions:    revisionsAPI{db: d.db, lxd: d.lxd, reporter: l},
		rollouts:     rolloutsAPI{db: d.db, ops: d.ops, engine: d.rollouts},
		resize:       resizeAPI{db: d.db, lxd: d.lxd, reporter: l, inPlace: d.fleet.InPlace},
		ui:           ui.API{DB: d.db, Addresses: d.addresses},
		access:       access,
		governorHold: governorHoldAPI{db: d.db},
	}
}

// serve runs an HTTP server on the listener, tagging every request with its protocol
// (listen.Server).
func (d *daemon) serve(listener net.Listener, handler http.Handler, protocol string) {
	server := listen.Server(rest.WithTLSState(rest.Observe(handler, d.logger, d.metrics)), protocol, d.logger, d.conns)
	d.servers = append(d.servers, server)
	listen.Serve(server, rest.EnvelopeListener(listener), protocol, d.logger)
}

// authenticate turns a request into a caller: the unix socket is an admin, a TLS peer is
// another member or whoever its certificate is in the trust store (cluster.AuthenticateTLS).
func (d *daemon) authenticate(r *http.Request) (*auth.Caller, error) {
	switch listen.Protocol(r) {
	case auth.ProtocolUnix:
		return &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true, Name: listen.UnixPeer(r)}, nil
	case auth.ProtocolTLS:
		// Browsers attach client certificates and cookies whatever page asks (doc/ui.md).
		err := auth.CheckBrowserOrigin(r)
		if err != nil {
			return nil, err
		}

		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return ui.Authenticate(r, d.db, time.Now())
		}

		return cluster.AuthenticateTLS(r, d.db, d.identity != nil)
	case auth.ProtocolGovernor:
		return authenticateGovernor(r, listen.GovernorConn(r), d.db, d.lxd, d.tokens)
	}

	return &auth.Caller{}, nil
}

// addresses lists the host:port pairs the HTTPS API can be reached on (listen.Addresses).
func (o *opened) addresses() []string {
	return listen.Addresses(o.config.httpsAddress)
}
