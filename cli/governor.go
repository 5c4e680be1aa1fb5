package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/prometheus"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Timeouts of the governor's calls: a request, and the wait for one launch or delete.
const (
	governorRequestTimeout   = time.Minute
	governorOperationTimeout = 10 * time.Minute
)

// governorCommand is "lxd-deploy governor": a small autoscaler, to run as is or to read as
// the example of a governor. The decisions are in shared/policy; this only wires HTTP,
// the client and the policy together.
func (a *app) governorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "governor",
		Short: "Run an autoscaler for a deployment (an example governor)",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(
		a.governorRunCommand(),
		a.governorPolicyCheckCommand(),
	)

	return cmd
}

// governorFlags are the flags of "governor run".
type governorFlags struct {
	listen     string
	secret     string
	secretFile string
	remote     string
	cert       string
	key        string
	serverCert string
	socket     string
	deployment string
	policyFile string
	dryRun     bool

	prometheusURL string
	queryInterval time.Duration
	name          string
	takeover      bool
	holdTTL       time.Duration
}

func (a *app) governorRunCommand() *cobra.Command {
	var f governorFlags
	cmd := &cobra.Command{
		Use:   "run --listen <host:port> --deployment <name> (--secret <s> | --secret-file <file>) (--remote ... | --socket ...)",
		Short: "Receive the deployment's webhooks and scale its shapes",
		Long: `Receive the webhooks of a deployment and scale its shapes through the governor API.

Deliveries are checked against the deployment's webhook secret (signature and a 5 minute
timestamp window; anything else is answered 401), deduplicated by event id, answered at once
and acted on in the background, one shape at a time per shape. Scale requests bring a shape to
their target within its bounds; metrics drive CPU target tracking as Kubernetes' HPA does, per
the policy file (see "lxd-deploy governor policy-check"), or a shape's Prometheus query
(asked every --query-interval of --prometheus-url), or requests per instance through the
shape's front door (the traffic figures of the metrics events). Shapes the policy file does not list
follow scale requests only. Every decision is logged with its reason.

Reaching lxd-deployd, with a deployment key's certificate and private key (role admin to act,
read-only is enough for --dry-run):
  --remote https://host:8444 --cert gov.crt --key gov.key --server-cert server.crt
  --socket /dev/lxd-deployd.sock --cert gov.crt --key gov.key     (inside an instance)
  --remote <name>          a remote added with "lxd-deploy remote add" (its client key pair)

Example policy file:
  shapes:
    web:
      follow_scale_requests: true      # default true
      cpu_target: 0.5                  # cores per instance; 0 or absent: no target tracking
      tolerance: 0.1                   # default 0.1: no change within 10% of the target
      scale_up_cooldown: 30s
      scale_down_cooldown: 60s
      scale_down_stabilization: 120s   # scale down only to the highest recommendation seen
    api:                               # target tracking on a Prometheus query (--prometheus-url)
      query: 'sum(rate(http_requests_total{shape="api"}[1m]))'
      query_target: 100                # of the query's value per instance: ceil(value / 100) instances
    shop:                              # target tracking on requests through the shape's front door
      requests_per_instance: 50        # requests per second per instance: ceil(rate / 50) instances
    preview:                           # scale to zero (scaling_minimum 0 and a front door)
      idle_to_zero: 5m                 # no request through the front door for 5m: 0 instances`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.governorRun(cmd.Context(), &f)
		},
	}

	flags := cmd.Flags()
	flags.StringVar(&f.listen, "listen", "", "address to receive webhooks on (host:port, plain HTTP)")
	flags.StringVar(&f.secret, "secret", "", "the deployment's webhook secret (visible to other users in ps: prefer --secret-file)")
	flags.StringVar(&f.secretFile, "secret-file", "", "file holding the deployment's webhook secret")
	flags.StringVar(&f.remote, "remote", "", "lxd-deployd's HTTPS address (https://host:port), or the name of a configured remote")
	flags.StringVar(&f.cert, "cert", "", "certificate of the deployment key (PEM)")
	flags.StringVar(&f.key, "key", "", "private key of that certificate (PEM)")
	flags.StringVar(&f.serverCert, "server-cert", "", "lxd-deployd's certificate to pin (PEM), with an https:// --remote")
	flags.StringVar(&f.socket, "socket", "", "lxd-deployd's socket inside an instance ("+client.GovernorSocket+"), with tokens signed by --cert/--key")
	flags.StringVar(&f.deployment, "deployment", "", "the deployment to govern")
	flags.StringVar(&f.policyFile, "policy", "", "policy file (YAML); without it every shape follows scale requests only")
	flags.BoolVar(&f.dryRun, "dry-run", false, "log decisions without launching or deleting anything")
	flags.StringVar(&f.prometheusURL, "prometheus-url", "", "Prometheus server asked for the policy's queries (http://host:9090; user:password@ for basic auth)")
	flags.DurationVar(&f.queryInterval, "query-interval", 15*time.Second, "how often each shape's query is asked")
	flags.StringVar(&f.name, "name", "", "the name this governor registers under as the deployment's active governor (default: the host name)")
	flags.BoolVar(&f.takeover, "takeover", false, "take the deployment over from the governor that holds it")
	flags.DurationVar(&f.holdTTL, "hold-ttl", time.Duration(api.DeploymentGovernorTTLDefault)*time.Second, "how long the hold on the deployment lasts without renewal (renewed at a third of it)")
	_ = cmd.MarkFlagRequired("listen")
	_ = cmd.MarkFlagRequired("deployment")
	return cmd
}

// governorLogger logs at info (debug with --debug), key=value, one line per event.
func (a *app) governorLogger() *slog.Logger {
	level := slog.LevelInfo
	if a.debug {
		level = slog.LevelDebug
	}

	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

func (a *app) governorRun(ctx context.Context, f *governorFlags) error {
	err := validate.Name("deployment", f.deployment)
	if err != nil {
		return err
	}

	secret, err := f.readSecret()
	if err != nil {
		return err
	}

	minTTL, maxTTL := time.Duration(api.DeploymentGovernorTTLMinimum)*time.Second, time.Duration(api.DeploymentGovernorTTLMaximum)*time.Second
	if f.holdTTL < minTTL || f.holdTTL > maxTTL || f.holdTTL%time.Second != 0 {
		return fmt.Errorf("--hold-ttl %s is out of range: give whole seconds from %s to %s", f.holdTTL, minTTL, maxTTL)
	}

	p, err := readPolicy(f.policyFile)
	if err != nil {
		return err
	}

	queries, err := queryShapes(p, f.prometheusURL, f.queryInterval)
	if err != nil {
		return err
	}

	var prom *prometheus.Client
	if len(queries) > 0 {
		prom, err = prometheus.New(f.prometheusURL, min(governorQueryTimeout, f.queryInterval))
		if err != nil {
			return fmt.Errorf("--prometheus-url: %w", err)
		}
	}

	server, err := a.governorConnect(f)
	if err != nil {
		return err
	}

	log := a.governorLogger().With("deployment", f.deployment)

	// Fail fast on a wrong key, server or deployment rather than at the first event.
	shapes, err := server.GetDeploymentShapeNames(f.deployment)
	if err != nil {
		return fmt.Errorf("cannot read deployment %s of project %s: %w", f.deployment, server.Project(), err)
	}

	for _, name := range p.Names() {
		if !slices.Contains(shapes, name) {
			log.Warn("the policy file names a shape the deployment does not have (yet)", "shape", name)
		}
	}

	for _, name := range shapes {
		log.Info("policy", "shape", name, "policy", p.Shape(name).String())
	}

	if f.prometheusURL != "" && prom == nil {
		log.Warn("no shape of the policy has a query: --prometheus-url is not used")
	}

	// One active governor per deployment: take it (or say who has it) before receiving
	// anything. A dry run acts on nothing, so it holds nothing (a read-only key may run it).
	var hold *governorHold
	if !f.dryRun {
		name := f.name
		if name == "" {
			name = defaultGovernorName()
		}

		hold = &governorHold{server: server, deployment: f.deployment, name: name, ttl: f.holdTTL, log: log}
		err = hold.register(f.takeover)
		if err != nil {
			return err
		}

		// Released at the end, unless it was lost: then it is someone else's.
		defer func() {
			if hold != nil {
				hold.release()
			}
		}()
	}

	listener, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	lostHold := make(chan error, 1)
	if hold != nil {
		keepCtx, stopKeeping := context.WithCancel(ctx)
		defer stopKeeping()
		go hold.keep(keepCtx, func(err error) { lostHold <- err })
	}

	// Work gets its own context, ended only once no more deliveries come in.
	workCtx, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()

	g := newGovernor(workCtx, &clientScaler{server: server, deployment: f.deployment, opTimeout: governorOperationTimeout}, p, f.dryRun, log)
	srv := &http.Server{
		Handler:           newReceiver(secret, server.Project(), f.deployment, g, log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	if prom != nil {
		log.Info("asking prometheus", "prometheus", prom.String(), "every", f.queryInterval, "shapes", len(queries))
		g.pollQueries(workCtx, prom, queries, f.queryInterval)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(listener) }()
	log.Info("governor listening", "listen", listener.Addr().String(), "project", server.Project(), "dry_run", f.dryRun)

	var lost error
	select {
	case err = <-served:
	case lost = <-lostHold:
		// The hold is someone else's now: not released at the end.
		log.Error("stopping: another governor holds the deployment now", "err", lost)
		hold = nil
	case <-ctx.Done():
	}

	if err == nil {
		log.Info("stopping: no new deliveries, in-flight operations are left to lxd-deployd")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutdownCtx)
		cancel()
	}

	cancelWork()
	g.wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}

	return lost
}

// readSecret returns the webhook secret from exactly one of --secret and --secret-file.
func (f *governorFlags) readSecret() (string, error) {
	secret := f.secret
	switch {
	case f.secret != "" && f.secretFile != "":
		return "", errors.New("give the webhook secret with --secret or --secret-file, not both")
	case f.secretFile != "":
		data, err := os.ReadFile(f.secretFile)
		if err != nil {
			return "", fmt.Errorf("read the webhook secret: %w", err)
		}

		secret = strings.TrimSpace(string(data))
	}

	if secret == "" {
		return "", errors.New("the deployment's webhook secret is required: --secret-file <file> (or --secret <secret>)")
	}

	return secret, nil
}

// readPolicy reads a policy file; no file is an empty policy (defaults for every shape).
func readPolicy(path string) (*policy.Policy, error) {
	if path == "" {
		return &policy.Policy{}, nil
	}

	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}

	p, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	return p, nil
}

// governorConnect reaches lxd-deployd as the deployment key: HTTPS with the key pair and the
// pinned server certificate, the in-instance socket with tokens signed by the key pair, or a
// remote configured with "lxd-deploy remote add".
func (a *app) governorConnect(f *governorFlags) (*client.Server, error) {
	args := a.connectionArgs()
	args.Timeout = governorRequestTimeout
	readPair := func() (string, string, error) {
		if f.cert == "" || f.key == "" {
			return "", "", errors.New("--cert and --key (the deployment key's certificate and private key) are required")
		}

		cert, err := os.ReadFile(f.cert)
		if err != nil {
			return "", "", err
		}

		key, err := os.ReadFile(f.key)
		if err != nil {
			return "", "", err
		}

		return string(cert), string(key), nil
	}

	switch {
	case f.remote != "" && f.socket != "":
		return nil, errors.New("--remote and --socket are exclusive: --socket inside an instance, --remote elsewhere")
	case f.socket != "":
		if f.serverCert != "" {
			return nil, errors.New("--server-cert is for --remote: the socket needs no TLS")
		}

		cert, key, err := readPair()
		if err != nil {
			return nil, err
		}

		hostname, _ := os.Hostname()
		signer, err := client.NewTokenSigner(cert, key, args.Project, f.deployment, hostname)
		if err != nil {
			return nil, err
		}

		args.TokenSource = signer.Token
		return client.ConnectUnix(f.socket, args)
	case strings.Contains(f.remote, "://"):
		cert, key, err := readPair()
		if err != nil {
			return nil, err
		}

		if f.serverCert == "" {
			return nil, errors.New("--server-cert is required with --remote https://...: lxd-deployd's certificate (<data-dir>/server.crt), pinned")
		}

		serverCert, err := os.ReadFile(f.serverCert)
		if err != nil {
			return nil, err
		}

		args.TLSClientCert, args.TLSClientKey, args.TLSServerCert = cert, key, string(serverCert)
		return client.ConnectHTTPS(f.remote, args)
	case f.remote != "":
		if f.cert != "" || f.key != "" || f.serverCert != "" {
			return nil, fmt.Errorf("remote %q is a configured remote, which has its own key pair: drop --cert, --key and --server-cert, or give an https:// address", f.remote)
		}

		c, err := a.loadConfig()
		if err != nil {
			return nil, err
		}

		return a.connect(c, f.remote)
	}

	return nil, errors.New("say how to reach lxd-deployd: --remote https://host:port with --cert, --key and --server-cert, or --socket " + client.GovernorSocket + " with --cert and --key inside an instance")
}

func (a *app) governorPolicyCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "policy-check <file>",
		Short: "Check a governor policy file",
		Long:  "Check a policy file of \"lxd-deploy governor run\" and print what it says for each shape.",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := readPolicy(args[0])
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "%s is valid (%d shapes)\n", args[0], len(p.Shapes))
			if err != nil {
				return err
			}

			for _, name := range p.Names() {
				_, err = fmt.Fprintf(a.stdout, "  %s: %s\n", name, p.Shape(name))
				if err != nil {
					return err
				}
			}

			_, err = fmt.Fprintf(a.stdout, "  other shapes: %s\n", policy.DefaultShape())
			return err
		},
	}
}
