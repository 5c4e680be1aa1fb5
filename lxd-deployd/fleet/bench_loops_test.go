package fleet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/observed"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkLoopsAtRest prices each background loop of the fleet at rest (issue 20) without
// LXD: a real dqlite holding 1,000 created instances over 4 shapes, each with an exec health
// check and a verdict, and a fake LXD on a unix socket that answers the calls the loops make
// from listings rendered once (so that serving them costs next to nothing of the process's
// CPU, which is what is measured: the Go side and dqlite's C threads alike). Each loop's
// round runs b.N times; the figures are the CPU of one round and what that makes per
// minute at the loop's real period (package care, the reconcile interval), as a share
// of one core. `make bench` runs it.
func BenchmarkLoopsAtRest(b *testing.B) {
	n := 1000
	if v := os.Getenv("LOOPS_BENCH_INSTANCES"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}

	e := newRestBench(b, n, 4)
	fmt.Printf("background loops over %d instance records (4 shapes), fake LXD; core-%% is at the loop's real period\n", n)
	loops := []struct {
		name   string
		period time.Duration
		round  func(ctx context.Context) error
	}{
		{"hooks", time.Second, e.fleet.Hooks.round},
		{"autoheal", 2 * time.Second, e.fleet.Healer.round},
		{"warm-pool", 5 * time.Second, e.fleet.Pool.round},
		{"warm-pool-listing", time.Minute, func(ctx context.Context) error { e.fleet.Pool.listed = time.Time{}; return e.fleet.Pool.round(ctx) }},
		{"in-place", 30 * time.Second, e.fleet.InPlace.Round},
		{"reconcile", time.Minute, e.fleet.Reconciler.reconcile},
		{"metrics-webhook", time.Second, func(ctx context.Context) error { return e.collector.Collect(ctx, time.Now()) }},
	}

	for _, l := range loops {
		b.Run(l.name, func(b *testing.B) {
			ctx := context.Background()
			err := l.round(ctx) // warm: connections, statements
			if err != nil {
				b.Fatal(err)
			}

			b.ResetTimer()
			before := cpuTime()
			for i := 0; i < b.N; i++ {
				err := l.round(ctx)
				if err != nil {
					b.Fatal(err)
				}
			}

			perRound := (cpuTime() - before) / time.Duration(b.N)
			share := 100 * perRound.Seconds() / l.period.Seconds()
			b.ReportMetric(float64(perRound.Microseconds())/1000, "cpu-ms/round")
			b.ReportMetric(float64(perRound.Microseconds())/1000*time.Minute.Seconds()/l.period.Seconds(), "cpu-ms/min")
			b.ReportMetric(share, "core-%")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system, every thread.
func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// restBench is a fleet over n created instance records and the fake LXD holding them.
type restBench struct {
	db        *db.Cluster
	fleet     *Fleet
	collector *webhooks.Collector
}

func newRestBench(b *testing.B, n int, shapes int) *restBench {
	b.Helper()
	e := &restBench{db: dbtest.Open(b)}
	ctx := context.Background()
	now := time.Now()
	var live []lxdapi.Instance
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		for s := 0; s < shapes; s++ {
			name := fmt.Sprintf("rest%d", s)
			var shape api.DeploymentShapesPost
			err = json.Unmarshal([]byte(fmt.Sprintf(`{"name":%q,"instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":0,"scaling_maximum":%d,
				"health":{"kind":"exec","command":["sh","-c","true"],"interval":"10s"}}`, name, n)), &shape)
			if err != nil {
				return err
			}

			shapeID, err := db.CreateShape(ctx, tx, deploymentID, shape)
			if err != nil {
				return err
			}

			for i := s; i < n; i += shapes {
				instance := fmt.Sprintf("%s-%04d", name, i)
				id, err := db.CreateInstance(ctx, tx, "default", shapeID, instance, "hash", 1, "bench", now)
				if err != nil {
					return err
				}

				err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "bench", now)
				if err != nil {
					return err
				}

				checked := now
				err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: api.HealthHealthy, Output: "", CheckedAt: &checked, Streak: 3})
				if err != nil {
					return err
				}

				live = append(live, fakeInstance(instance, "dep1", name))
			}
		}

		return nil
	})
	if err != nil {
		b.Fatal(err)
	}

	socket := serveFakeLXD(b, live)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	lxd := backend.NewLXD(socket, logger)
	runCtx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	go lxd.Run(runCtx, time.Hour, nil)
	for deadline := time.Now().Add(10 * time.Second); !lxd.Status().Online; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("fake LXD not online: %s", lxd.Status().Reason)
		}
	}

	e.fleet = New(Config{DB: e.db, LXD: lxd, Sockets: noSockets{}, Logger: logger, Owner: "bench"})
	e.collector = webhooks.NewCollector(e.db, observed.New(lxd, nil, nil), nil, logger)
	return e
}

// fakeInstance is what LXD 5.0 lists (recursion=1) of a running busybox container of a shape.
func fakeInstance(name string, deployment string, shape string) lxdapi.Instance {
	config := map[string]string{
		backend.ConfigDeployment:          deployment,
		backend.ConfigShape:               shape,
		"security.protection.delete":      "true",
		"image.architecture":              "amd64",
		"image.description":               "Busybox x86_64",
		"image.name":                      "busybox-x86_64",
		"image.os":                        "Busybox",
		"volatile.base_image":             strings.Repeat("ab", 32),
		"volatile.cloud-init.instance-id": "9c3b3b7e-5f0a-4a8e-9d7c-1f0e2d3c4b5a",
		"volatile.eth0.host_name":         "veth1234abcd",
		"volatile.eth0.hwaddr":            "00:16:3e:12:34:56",
		"volatile.idmap.base":             "0",
		"volatile.idmap.current":          `[{"Isuid":true,"Isgid":false,"Hostid":1000000,"Nsid":0,"Maprange":1000000000}]`,
		"volatile.last_state.power":       "RUNNING",
		"volatile.uuid":                   "1f0e2d3c-4b5a-4a8e-9d7c-9c3b3b7e5f0a",
	}

	devices := map[string]map[string]string{
		"root": {"path": "/", "pool": "default", "type": "disk"},
		"eth0": {"name": "eth0", "network": "lxdbr0", "type": "nic"},
	}

	return lxdapi.Instance{
		Name: name, Status: "Running", StatusCode: lxdapi.Running, Type: "container", Architecture: "x86_64", Location: "none", Project: "default",
		Profiles: []string{"default"}, Config: config, Devices: map[string]map[string]string{}, ExpandedConfig: config, ExpandedDevices: devices,
		CreatedAt: time.Now(), LastUsedAt: time.Now(), Description: "", Stateful: false, Ephemeral: false,
	}
}

// serveFakeLXD answers, on a unix socket, what the fleet's loops ask of LXD: the server,
// the instance listing (filter= is not applied: the loops list whole projects), the
// operations (none running) and the metrics (none). The bodies are rendered once.
func serveFakeLXD(b *testing.B, instances []lxdapi.Instance) string {
	b.Helper()
	envelope := func(metadata any) []byte {
		data, err := json.Marshal(metadata)
		if err != nil {
			b.Fatal(err)
		}

		out, err := json.Marshal(lxdapi.ResponseRaw{Type: lxdapi.SyncResponse, Status: "Success", StatusCode: http.StatusOK, Metadata: json.RawMessage(data)})
		if err != nil {
			b.Fatal(err)
		}

		return out
	}

	server := envelope(lxdapi.Server{ServerUntrusted: lxdapi.ServerUntrusted{APIExtensions: []string{"metrics", "instances", "projects", "container_full"}, APIStatus: "stable", APIVersion: "1.0", Auth: "trusted"},
		Environment: lxdapi.ServerEnvironment{ServerVersion: "5.0.2", ServerName: "fake", Project: "default"}})
	listing := envelope(instances)
	operations := envelope(map[string][]lxdapi.Operation{})
	mux := http.NewServeMux()
	mux.HandleFunc("/1.0", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(server) })
	mux.HandleFunc("/1.0/instances", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(listing) })
	mux.HandleFunc("/1.0/operations", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(operations) })
	mux.HandleFunc("/1.0/metrics", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(nil) })

	socket := filepath.Join(b.TempDir(), "lxd.socket")
	l, err := net.Listen("unix", socket)
	if err != nil {
		b.Fatal(err)
	}

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return socket
}
