package webhooks

import (
	"testing"
	"time"
)

const lxdMetrics = `# HELP lxd_cpu_seconds_total The total number of CPU time used in seconds.
# TYPE lxd_cpu_seconds_total counter
lxd_cpu_seconds_total{cpu="0",mode="system",name="m1",project="default",type="container"} 1.5
lxd_cpu_seconds_total{cpu="0",mode="user",name="m1",project="default",type="container"} 2
lxd_cpu_seconds_total{cpu="1",mode="user",name="m1",project="default",type="container"} 0.5
lxd_cpu_seconds_total{cpu="0",mode="user",name="m2",project="p2",type="container"} 7
# HELP lxd_memory_MemAvailable_bytes The amount of available memory.
# TYPE lxd_memory_MemAvailable_bytes gauge
lxd_memory_MemAvailable_bytes{name="m1",project="default",type="container"} 2.0e+08
# HELP lxd_memory_MemTotal_bytes The amount of used memory.
# TYPE lxd_memory_MemTotal_bytes gauge
lxd_memory_MemTotal_bytes{name="m1",project="default",type="container"} 2.56e+08
# HELP lxd_procs_total The number of running processes.
# TYPE lxd_procs_total gauge
lxd_procs_total{name="m1",project="default",type="container"} 3
`

func TestParseLXDMetrics(t *testing.T) {
	samples, err := ParseLXDMetrics(lxdMetrics)
	if err != nil {
		t.Fatal(err)
	}

	m1 := samples["default/m1"]
	if m1.CPUSeconds != 4 || m1.MemoryTotal != 256000000 || m1.MemoryUsed != 56000000 {
		t.Fatalf("m1: %+v", m1)
	}

	if samples["p2/m2"].CPUSeconds != 7 {
		t.Fatalf("m2: %+v", samples["p2/m2"])
	}

	_, err = ParseLXDMetrics("not metrics {")
	if err == nil {
		t.Fatal("garbage must be an error")
	}
}

func TestBackoff(t *testing.T) {
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 30 * time.Second} {
		for i := 0; i < 20; i++ {
			got := Backoff(attempts, time.Second, 30*time.Second)
			if got < want/2 || got > want {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", attempts, got, want/2, want)
			}
		}
	}
}

func TestBackoffNeverOverflows(t *testing.T) {
	huge := time.Duration(1<<62 - 1)
	for _, attempts := range []int{1, 45, 1000} {
		if got := Backoff(attempts, time.Hour, huge); got <= 0 || got > huge {
			t.Fatalf("Backoff(%d) with a huge maximum = %v", attempts, got)
		}
	}
}

func TestConfigFrom(t *testing.T) {
	cfg := ConfigFrom(map[string]string{KeyMetricsInterval: "0", KeyRetryMaxAttempts: "3", KeyTimeout: "2s"})
	if cfg.MetricsInterval != 0 || cfg.MaxAttempts != 3 || cfg.Timeout != 2*time.Second || cfg.InitialDelay != time.Second {
		t.Fatalf("config: %+v", cfg)
	}

	if ConfigFrom(nil).MetricsInterval != time.Minute {
		t.Fatal("default metrics interval is a minute")
	}
}

func TestRatesSurviveLXDMetricsCache(t *testing.T) {
	c := &Collector{previous: map[string]timedSample{}}
	start := time.Now()
	read := func(cpu float64, at time.Duration) *float64 {
		c.updateRates(map[string]Sample{"default/m1": {CPUSeconds: cpu}}, start.Add(at))
		return c.previous["default/m1"].rate
	}

	if read(10, 0) != nil {
		t.Fatal("the first reading has no rate")
	}

	// LXD serves the same cached reading for a while: no rate yet, and no false zero.
	if read(10, time.Second) != nil || read(10, 2*time.Second) != nil {
		t.Fatal("an unchanged (cached) reading must not produce a rate")
	}

	// The cache refreshes: the rate spans the time between distinct readings.
	rate := read(14, 8*time.Second)
	if rate == nil || *rate != 0.5 {
		t.Fatalf("rate over 8s for 4 CPU seconds: %v", rate)
	}

	if again := read(14, 9*time.Second); again == nil || *again != 0.5 {
		t.Fatal("the last rate is carried while the reading is cached")
	}

	// Past LXD's cache time, an unmoved reading is an idle instance.
	if idle := read(14, 8*time.Second+lxdMetricsCache); idle == nil || *idle != 0 {
		t.Fatalf("idle after the cache time: %v", idle)
	}

	// When LXD refreshes, an instance whose reading did not move is idle: rate 0.
	c.updateRates(map[string]Sample{"default/m1": {CPUSeconds: 14}, "default/busy": {CPUSeconds: 1}}, start.Add(30*time.Second))
	c.updateRates(map[string]Sample{"default/m1": {CPUSeconds: 14}, "default/busy": {CPUSeconds: 9}}, start.Add(38*time.Second))
	if idle := c.previous["default/m1"].rate; idle == nil || *idle != 0 {
		t.Fatalf("idle instance: %v", idle)
	}

	if busy := c.previous["default/busy"].rate; busy == nil || *busy != 1 {
		t.Fatalf("busy instance: %v", busy)
	}
}
