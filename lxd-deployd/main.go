// Command lxd-deployd is the deployment and autoscaling daemon that runs beside LXD.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
	"github.com/lxd-deployd/lxd-deployd/shared/version"
)

func main() {
	// Template expansion re-executes this binary as a limited child (see isolate).
	isolate.MaybeChild()
	err := rootCommand().Execute()
	if err != nil {
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	var cfg config
	var debug bool

	cmd := &cobra.Command{
		Use:           "lxd-deployd",
		Short:         "Deployment and autoscaling daemon for LXD",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: false,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			level := slog.LevelInfo
			if debug {
				level = slog.LevelDebug
			}

			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(logger)
			return run(cfg, logger)
		},
	}

	flags := cmd.Flags()
	flags.StringVar(&cfg.dataDir, "data-dir", envOr("LXD_DEPLOYD_DIR", "/var/lib/lxd-deployd"), "directory for the database, certificates and unix socket [LXD_DEPLOYD_DIR]")
	flags.StringVar(&cfg.httpsAddress, "https-address", "[::]:8444", "address of the HTTPS API (empty disables it)")
	flags.StringVar(&cfg.lxdSocket, "lxd-socket", backend.DefaultSocket(), "unix socket of the LXD daemon")
	flags.StringVar(&cfg.clusterAddress, "cluster-address", "", "host:port for dqlite to listen on, so that other daemons can join (first start only; default: a private local socket)")
	flags.StringSliceVar(&cfg.clusterJoin, "cluster-join", nil, "dqlite addresses of existing daemons to join on first start")
	flags.StringVar(&cfg.clusterName, "cluster-name", "", "this member's name in the cluster (default: the host name, or the name its join token gives)")
	flags.StringVar(&cfg.clusterJoinToken, "cluster-join-token", "", "join token printed by \"lxd-deploy cluster add <name>\" on a member (first start; needs --cluster-address)")
	flags.DurationVar(&cfg.joinTokenExpiry, "cluster-join-token-expiry", 3*time.Hour, "how long the join tokens this member issues can be used")
	flags.DurationVar(&cfg.lxdPollInterval, "lxd-poll-interval", 5*time.Second, "how often to check the connection to LXD")
	flags.DurationVar(&cfg.reconcileInterval, "reconcile-interval", time.Minute, "how often to compare instance records with LXD")
	flags.Uint32Var(&cfg.vsockPort, "vsock-port", 8444, "vsock port for governors in VMs (0 disables)")
	flags.StringToStringVar(&cfg.templateRegistries, "template-registry", nil, "template registry the daemon may fetch from, as <host>/<owner>/<repo>=<https URL or directory> (repeatable)")
	flags.StringVar(&cfg.templateDefault, "template-default-registry", "", "registry (with optional collection) that short template references resolve against")
	flags.Var(&isolate.MemoryFlag{N: &cfg.templateMaxMemory}, "template-max-memory", "memory one template expansion may allocate, in its own process (template.max_memory, e.g. 512MiB)")
	flags.StringSliceVar(&cfg.webhookAllowedNetworks, "webhook-allowed-networks", nil, "networks (CIDR) webhooks may be delivered to (default: any but link-local and metadata addresses)")
	flags.StringVar(&cfg.privateLXD, "private-lxd", "", "when no LXD answers at --lxd-socket or the usual sockets, run a private one with this LXD_DIR (make run uses ./.run/lxd); empty: never")
	flags.StringVar(&cfg.frontDoor, "front-door", doorkeeper.DoorPrivate, "the load balancer in front of shapes with traffic (doc/traffic.md): private (a private HAProxy of the daemon's own, started when a shape first has traffic), haproxy (an operator's, through --haproxy-socket) or none (the endpoints API only)")
	flags.StringVar(&cfg.haproxySocket, "haproxy-socket", "", "admin socket of the operator's HAProxy (--front-door haproxy)")
	flags.BoolVar(&debug, "debug", false, "log every request")
	flags.BoolVar(&cfg.pprof, "debug-pprof", false, "serve Go's /debug/pprof/ profiles on the unix socket (root only)")
	// Tests only (doc/daemon.md): the scheduler's time, so that tests cross DST changes and
	// downtime without waiting. Hidden from --help.
	flags.StringVar(&cfg.testClockFile, "test-clock-file", "", "tests only: a file holding the RFC 3339 time the scheduler uses instead of the clock")
	_ = flags.MarkHidden("test-clock-file")

	return cmd
}

// run starts the daemon and serves until SIGTERM or SIGINT, then shuts down gracefully.
func run(cfg config, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Before dqlite starts: its snapshots otherwise stay in the C heap (doc/internals.md).
	tuned, err := db.TuneMalloc()
	if err != nil {
		logger.Warn("malloc left as glibc sets it", "err", err)
	} else if !tuned {
		logger.Info("glibc malloc settings from the environment kept")
	}

	d, err := startDaemon(ctx, cfg, logger, stop)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// SIGTERM or SIGINT while starting is a stop asked for, not a failure.
			logger.Info("stopped while starting")
			return nil
		}

		return err
	}

	logger.Info("lxd-deployd started", "version", version.Version, "data_dir", cfg.dataDir, "lxd_socket", d.config.lxdSocket)
	<-ctx.Done()
	logger.Info("shutting down")

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = d.stop(shutdownCtx)
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}

	logger.Info("stopped")
	return nil
}

// startDaemon opens, builds and starts the daemon. What a failure leaves half started is
// stopped, and what was opened closed.
func startDaemon(ctx context.Context, cfg config, logger *slog.Logger, quit context.CancelFunc) (*daemon, error) {
	o, err := open(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}

	d, err := newDaemon(o, logger, quit)
	if err == nil {
		err = d.start(ctx)
	}

	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), startFailureWait)
		defer cancel()
		if d != nil {
			_ = d.stop(stopCtx)
		} else {
			_ = o.close(stopCtx, logger)
		}

		return nil, err
	}

	return d, nil
}

func envOr(name string, fallback string) string {
	value := os.Getenv(name)
	if value == "" {
		return fallback
	}

	return value
}
