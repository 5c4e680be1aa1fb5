package db

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// memorySettings are the settings BenchmarkMemory compares, each as the environment of its
// process: knobs of Go (GOGC, GOMEMLIMIT), of glibc (MALLOC_ARENA_MAX; any of glibc's own
// settings in the environment also turns TuneMalloc off, as in the daemon) and of the
// database (MEMORY_BENCH_*, read by memoryWorkload). MEMORY_BENCH_SETTINGS replaces them:
// "name:K=V,K=V;name2:K=V".
func memorySettings() [][2]string {
	if v := os.Getenv("MEMORY_BENCH_SETTINGS"); v != "" {
		var out [][2]string
		for _, s := range strings.Split(v, ";") {
			name, env, _ := strings.Cut(s, ":")
			out = append(out, [2]string{name, env})
		}

		return out
	}

	// Others measured (doc/internals.md): "glibc's malloc defaults:GLIBC_TUNABLES=...",
	// "MALLOC_ARENA_MAX=2:MALLOC_MMAP_THRESHOLD_=131072,MALLOC_ARENA_MAX=2",
	// "snapshots 16/32:MEMORY_BENCH_SNAPSHOT=16/32".
	return [][2]string{
		{"as the daemon opens it", ""},
		// 16 arenas are glibc's own maximum on 2 cores: the variable only turns TuneMalloc off.
		{"before: glibc's malloc defaults, snapshots 64/128", "GLIBC_TUNABLES=glibc.malloc.arena_max=16,MEMORY_BENCH_SNAPSHOT=64/128"},
	}
}

// BenchmarkMemory prices the database's share of the daemon's memory at 1,000 instances
// (issue 20) without LXD: in a process of its own per setting, it opens the database as the
// daemon does, makes what a BenchmarkScale run writes (1,000 launches over 4 shapes, 16 at
// a time, each a reservation and a created transaction with its activity entry), then
// records health results for 100 instances a second in one transaction a second (as the
// checker's flush) while a loop lists every instance each second, for
// MEMORY_BENCH_WINDOW (default 1m). It prints the process's RSS over time, split into
// file-backed (the binary and its libraries), Go's resident memory (runtime/metrics:
// heap objects, heap free but kept, stacks, the runtime's own) and the anonymous rest,
// which is C: glibc malloc's arenas as mallinfo2 counts them (dqlite, raft, sqlite), in
// use (m-use), kept free (m-free), in mappings of their own (m-mmap) and the arenas' size
// (m-ar); and the process's CPU time. About 80 s per setting; make bench runs it. Knobs:
// MEMORY_BENCH_INSTANCES, MEMORY_BENCH_WINDOW, MEMORY_BENCH_SNAPSHOT (threshold/trailing),
// MEMORY_BENCH_TRIM (malloc_trim every so often), MEMORY_BENCH_MAX_IDLE and
// MEMORY_BENCH_MAX_OPEN (the connection pool), and memorySettings'.
func BenchmarkMemory(b *testing.B) {
	fmt.Printf("database memory, %s instances, a process per setting (MiB)\n", envOr("MEMORY_BENCH_INSTANCES", "1000"))
	for _, setting := range memorySettings() {
		var samples []memorySample
		b.Run(strings.ReplaceAll(setting[0], " ", "_"), func(b *testing.B) {
			// One process per setting whatever b.N: the figures are the process's, not a
			// time per operation, and the benchmark is called again with b.N 200 when
			// make bench runs ./db/ with -benchtime 200x.
			if samples == nil {
				samples = runMemoryChild(b, setting[1])
				fmt.Printf("%s (%s)\n", setting[0], setting[1])
				printMemorySamples(samples)
			}

			last := samples[len(samples)-1]
			b.ReportMetric(mebibytes(last.RSS), "rss-MiB")
			b.ReportMetric(mebibytes(last.RSS-samples[0].RSS), "growth-MiB")
			b.ReportMetric(mebibytes(last.Anon-last.GoResident), "c-MiB")
		})
	}
}

func runMemoryChild(b *testing.B, env string) []memorySample {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=memory-workload")
	if env != "" {
		cmd.Env = append(cmd.Env, strings.Split(env, ",")...)
	}

	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}

	err = cmd.Start()
	if err != nil {
		b.Fatal(err)
	}

	var samples []memorySample
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line, ok := strings.CutPrefix(scanner.Text(), "memsample ")
		if !ok {
			fmt.Println(scanner.Text())
			continue
		}

		var s memorySample
		err = json.Unmarshal([]byte(line), &s)
		if err != nil {
			b.Fatal(err)
		}

		samples = append(samples, s)
	}

	err = cmd.Wait()
	if err != nil || len(samples) == 0 {
		b.Fatalf("memory workload (%s): %v", env, err)
	}

	return samples
}

func printMemorySamples(samples []memorySample) {
	fmt.Printf("  %-14s %6s %6s %6s | %6s %6s %6s %6s %6s | %6s %6s %6s %6s %6s | %s\n",
		"phase", "rss", "file", "anon", "go", "heap", "free", "stack", "rt", "c", "m-use", "m-free", "m-mmap", "m-ar", "thr  cpu")
	for _, s := range samples {
		fmt.Printf("  %-14s %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f %6.1f %6.1f | %d  %v\n",
			s.Phase, mebibytes(s.RSS), mebibytes(s.File), mebibytes(s.Anon),
			mebibytes(s.GoResident), mebibytes(s.GoHeap), mebibytes(s.GoFree), mebibytes(s.GoStacks), mebibytes(s.GoRuntime),
			mebibytes(s.Anon-s.GoResident), mebibytes(int64(s.Malloc.InUse)), mebibytes(int64(s.Malloc.Free)), mebibytes(int64(s.Malloc.Mapped)), mebibytes(int64(s.Malloc.Arenas)), s.Threads, s.CPU.Round(time.Millisecond))
	}
}

func mebibytes(bytes int64) float64 {
	return float64(bytes) / (1 << 20)
}

func envOr(name string, fallback string) string {
	v := os.Getenv(name)
	if v == "" {
		return fallback
	}

	return v
}

// memorySample is the process's memory at one moment.
type memorySample struct {
	Phase   string
	RSS     int64 // VmRSS
	File    int64 // RssFile: the binary and the libraries
	Anon    int64 // RssAnon: Go's memory and C's
	Threads int

	// GoResident is what Go's runtime holds mapped and not released to the system
	// (/memory/classes/total minus /memory/classes/heap/released).
	GoResident int64
	GoHeap     int64 // heap objects
	GoFree     int64 // heap free or unused, not released
	GoStacks   int64 // goroutine and OS thread stacks Go allocated
	GoRuntime  int64 // the runtime's metadata and other
	Malloc     MallocStats

	// CPU is the process's CPU time so far (user and system, every thread: dqlite's too).
	CPU time.Duration
}

// readMemory samples the current process.
func readMemory(phase string) memorySample {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	s := memorySample{Phase: phase, Malloc: ReadMallocStats(), CPU: time.Duration(usage.Utime.Nano() + usage.Stime.Nano())}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}

		value, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			s.RSS = value << 10
		case "RssAnon:":
			s.Anon = value << 10
		case "RssFile:":
			s.File = value << 10
		case "Threads:":
			s.Threads = int(value)
		}
	}

	names := []string{
		"/memory/classes/total:bytes",
		"/memory/classes/heap/released:bytes",
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/stacks:bytes",
		"/memory/classes/os-stacks:bytes",
	}

	samples := make([]metrics.Sample, len(names))
	for i, name := range names {
		samples[i].Name = name
	}

	metrics.Read(samples)
	v := func(i int) int64 { return int64(samples[i].Value.Uint64()) }
	s.GoResident = v(0) - v(1)
	s.GoHeap = v(2)
	s.GoFree = v(3) + v(4)
	s.GoStacks = v(5) + v(6)
	s.GoRuntime = s.GoResident - s.GoHeap - s.GoFree - s.GoStacks
	return s
}

func emit(out *os.File, s memorySample) {
	data, _ := json.Marshal(s)
	fmt.Fprintf(out, "memsample %s\n", data)
}

// memoryWorkload is one setting's process (see BenchmarkMemory).
func memoryWorkload(out *os.File) error {
	n, _ := strconv.Atoi(envOr("MEMORY_BENCH_INSTANCES", "1000"))
	window, err := time.ParseDuration(envOr("MEMORY_BENCH_WINDOW", "1m"))
	if err != nil {
		return err
	}

	if v := os.Getenv("MEMORY_BENCH_SNAPSHOT"); v != "" {
		_, err = fmt.Sscanf(v, "%d/%d", &snapshotParams.Threshold, &snapshotParams.Trailing)
		if err != nil {
			return fmt.Errorf("MEMORY_BENCH_SNAPSHOT: %w", err)
		}
	}

	_, err = TuneMalloc() // as the daemon does at start
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "rss-memory-bench-")
	if err != nil {
		return err
	}

	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	c, err := Open(ctx, dir, Options{})
	if err != nil {
		return err
	}

	defer func() { _ = c.Close(ctx) }()
	if v := os.Getenv("MEMORY_BENCH_MAX_IDLE"); v != "" {
		idle, _ := strconv.Atoi(v)
		c.db.SetMaxIdleConns(idle)
	}

	if v := os.Getenv("MEMORY_BENCH_MAX_OPEN"); v != "" {
		open, _ := strconv.Atoi(v)
		c.db.SetMaxOpenConns(open)
	}

	stop := make(chan struct{})
	defer close(stop)
	if v := os.Getenv("MEMORY_BENCH_TRIM"); v != "" {
		every, err := time.ParseDuration(v)
		if err != nil {
			return err
		}

		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(every):
					trimMalloc()
				}
			}
		}()
	}

	shapes, deploymentID, err := memoryShapes(ctx, c, n)
	if err != nil {
		return err
	}

	emit(out, readMemory("shapes"))
	start := time.Now()
	ids, err := memoryLaunches(ctx, c, deploymentID, shapes, n)
	if err != nil {
		return err
	}

	emit(out, readMemory("launched"))
	fmt.Fprintf(out, "  %d launches in %v\n", n, time.Since(start).Round(time.Millisecond))

	// The loops' reads: every instance listed each second.
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}

			_ = c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
				rows, err := GetInstances(ctx, tx, InstanceFilter{State: InstanceCreated})
				reads.Add(int64(len(rows)))
				return err
			})
		}
	}()

	// The checker's flush: 100 results a second in one transaction, every instance in turn.
	next := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	end := time.Now().Add(window)
	for elapsed := 1; time.Now().Before(end); elapsed++ {
		<-tick.C
		err = c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			now := time.Now()
			for i := 0; i < 100; i++ {
				id := ids[(next+i)%len(ids)]
				row, err := GetInstance(ctx, tx, id.shape, id.name)
				if err != nil {
					return err
				}

				err = SetInstanceHealth(ctx, tx, row.ID, InstanceHealth{Status: api.HealthHealthy, ExitCode: 0, CheckedAt: &now, Streak: row.Health.Streak + 1})
				if err != nil {
					return err
				}
			}

			return nil
		})
		if err != nil {
			return fmt.Errorf("record health: %w", err)
		}

		next += 100
		if elapsed%10 == 0 {
			emit(out, readMemory(fmt.Sprintf("checks %ds", elapsed)))
		}
	}

	emit(out, readMemory("end"))
	snapshots, _ := filepath.Glob(filepath.Join(dir, "snapshot-*"))
	for _, name := range snapshots {
		info, err := os.Stat(name)
		if err == nil && !strings.HasSuffix(name, ".meta") {
			fmt.Fprintf(out, "  raft snapshot on disk: %s, %.1f MiB\n", filepath.Base(name), mebibytes(info.Size()))
		}
	}

	return nil
}

// memoryShapes makes a deployment and 4 shapes with exec checks, as BenchmarkScale does.
func memoryShapes(ctx context.Context, c *Cluster, n int) ([]string, int64, error) {
	var shapes []string
	var deploymentID int64
	err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		for s := 0; s < 4; s++ {
			name := fmt.Sprintf("rss%d", s)
			var shape api.DeploymentShapesPost
			err = json.Unmarshal([]byte(fmt.Sprintf(`{"name":%q,"instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":0,"scaling_maximum":%d,
				"health":{"kind":"exec","command":["sh","-c","true"],"interval":"10s"}}`, name, n)), &shape)
			if err != nil {
				return err
			}

			_, err = CreateShape(ctx, tx, deploymentID, shape)
			if err != nil {
				return err
			}

			shapes = append(shapes, name)
		}

		return nil
	})

	return shapes, deploymentID, err
}

// memoryInstance names a launched instance as the checker finds it again.
type memoryInstance struct {
	shape int64
	name  string
}

// memoryLaunches records n launches, 16 at a time: the reservation (shape read, instance
// row, activity entry) and, once LXD would have made it, the created transaction.
func memoryLaunches(ctx context.Context, c *Cluster, deploymentID int64, shapes []string, n int) ([]memoryInstance, error) {
	ids := make([]memoryInstance, n)
	errs := make(chan error, n)
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		slots <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			name := fmt.Sprintf("rss-%s-%d", shapes[i%len(shapes)], i)
			var row int64
			err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
				shape, err := GetShape(ctx, tx, deploymentID, shapes[i%len(shapes)])
				if err != nil {
					return err
				}

				row, err = CreateInstance(ctx, tx, "default", shape.ID, name, "hash", shape.Revision, "bench", time.Now())
				if err != nil {
					return err
				}

				ids[i] = memoryInstance{shape: shape.ID, name: name}
				by := api.DeploymentRequestor{Protocol: "unix", Name: "root"}
				return CreateActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "scale-up", From: shape.ScalingCurrent, To: shape.ScalingCurrent + 1,
					Who: "admin", Requestor: by, Why: "launch " + name, Time: time.Now()}, 1000)
			})
			if err == nil {
				err = c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
					return SetInstanceState(ctx, tx, row, InstanceCreating, InstanceCreated, "bench", time.Now())
				})
			}

			if err != nil {
				errs <- err
			}
		}(i)
	}

	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, fmt.Errorf("launch: %w", err)
	}

	return ids, nil
}
