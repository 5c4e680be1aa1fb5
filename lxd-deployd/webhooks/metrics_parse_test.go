package webhooks

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// lxdMetricsOf renders what LXD 5.0's /1.0/metrics holds of n running containers: every
// family it has, a hundred-odd lines an instance, and the server's own metrics without an
// instance.
func lxdMetricsOf(n int) string {
	var b strings.Builder
	family := func(name string, kind string, line func(i int) []string) {
		fmt.Fprintf(&b, "# HELP %s help text.\n# TYPE %s %s\n", name, name, kind)
		for i := 0; i < n; i++ {
			for _, l := range line(i) {
				b.WriteString(l + "\n")
			}
		}
	}

	labels := func(i int, extra string) string {
		return fmt.Sprintf(`{%sname="c-%04d",project="default",type="container"}`, extra, i)
	}

	family("lxd_cpu_seconds_total", "counter", func(i int) []string {
		var lines []string
		for cpu := 0; cpu < 2; cpu++ {
			for _, mode := range []string{"system", "user", "nice", "idle", "iowait", "irq", "softirq", "steal"} {
				lines = append(lines, fmt.Sprintf("lxd_cpu_seconds_total%s %g", labels(i, fmt.Sprintf(`cpu="%d",mode="%s",`, cpu, mode)), float64(i)/7+float64(cpu)))
			}
		}

		return lines
	})
	for _, name := range []string{"Active_anon", "Active", "Active_file", "Cached", "Dirty", "Inactive_anon", "Inactive", "Inactive_file", "Mapped", "MemAvailable", "MemFree", "MemTotal", "RSS", "Shmem", "Swap", "Unevictable", "Writeback"} {
		family("lxd_memory_"+name+"_bytes", "gauge", func(i int) []string {
			return []string{fmt.Sprintf("lxd_memory_%s_bytes%s %d", name, labels(i, ""), 1<<20*(i%50+len(name)))}
		})
	}

	for _, name := range []string{"receive_bytes_total", "receive_drop_total", "receive_errs_total", "receive_packets_total", "transmit_bytes_total", "transmit_drop_total", "transmit_errs_total", "transmit_packets_total"} {
		family("lxd_network_"+name, "counter", func(i int) []string {
			return []string{
				fmt.Sprintf("lxd_network_%s%s %d", name, labels(i, `device="eth0",`), i*1000),
				fmt.Sprintf("lxd_network_%s%s %d", name, labels(i, `device="lo",`), i),
			}
		})
	}

	family("lxd_procs_total", "gauge", func(i int) []string { return []string{fmt.Sprintf("lxd_procs_total%s 3", labels(i, ""))} })
	b.WriteString("# HELP lxd_go_goroutines Number of goroutines.\n# TYPE lxd_go_goroutines gauge\nlxd_go_goroutines 123\n")
	b.WriteString("# HELP lxd_uptime_seconds The daemon uptime in seconds.\n# TYPE lxd_uptime_seconds gauge\nlxd_uptime_seconds 1.5e+04\n")
	return b.String()
}

// parseFull is the full OpenMetrics parse ParseLXDMetrics once was: the reference.
func parseFull(text string) (map[string]Sample, error) {
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}

	samples := map[string]Sample{}
	memory := map[string]map[string]float64{}
	for name, family := range families {
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, label := range metric.GetLabel() {
				labels[label.GetName()] = label.GetValue()
			}

			key := labels["project"] + "/" + labels["name"]
			if labels["name"] == "" {
				continue
			}

			switch name {
			case "lxd_cpu_seconds_total":
				s := samples[key]
				s.CPUSeconds += metric.GetCounter().GetValue()
				samples[key] = s
			case "lxd_memory_MemTotal_bytes", "lxd_memory_MemAvailable_bytes":
				if memory[key] == nil {
					memory[key] = map[string]float64{}
				}

				memory[key][name] = metric.GetGauge().GetValue()
			}
		}
	}

	for key, values := range memory {
		s := samples[key]
		s.MemoryTotal = int64(values["lxd_memory_MemTotal_bytes"])
		s.MemoryUsed = int64(values["lxd_memory_MemTotal_bytes"] - values["lxd_memory_MemAvailable_bytes"])
		samples[key] = s
	}

	return samples, nil
}

// The line parser reads what the full parse reads, from LXD's whole answer and from the
// test's small one, escapes in label values included.
func TestParseLXDMetricsAsFullParse(t *testing.T) {
	escaped := "# TYPE lxd_cpu_seconds_total counter\n" + `lxd_cpu_seconds_total{cpu="0",mode="user",name="we\"ird\\n",project="p\\x",type="container"} 3` + "\n" +
		"# TYPE lxd_memory_MemTotal_bytes gauge\n" + `lxd_memory_MemTotal_bytes{name="we\"ird\\n",project="p\\x",type="container"} 100` + "\n"
	for name, text := range map[string]string{"small": lxdMetrics, "1,000 instances": lxdMetricsOf(1000), "escapes": escaped} {
		want, err := parseFull(text)
		if err != nil {
			t.Fatalf("%s: reference parse: %v", name, err)
		}

		got, err := ParseLXDMetrics(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}

		if len(got) != len(want) {
			t.Fatalf("%s: %d samples, want %d", name, len(got), len(want))
		}

		for key, w := range want {
			g := got[key]
			if math.Abs(g.CPUSeconds-w.CPUSeconds) > 1e-9 || g.MemoryTotal != w.MemoryTotal || g.MemoryUsed != w.MemoryUsed {
				t.Fatalf("%s: %s: %+v, want %+v", name, key, g, w)
			}
		}
	}

	for _, bad := range []string{"not metrics {", `lxd_cpu_seconds_total{name="x" 1`, `lxd_cpu_seconds_total{name="x"} one`, "lxd_procs_total"} {
		_, err := ParseLXDMetrics(bad)
		if err == nil {
			t.Fatalf("%q must be an error", bad)
		}
	}
}

func BenchmarkParseLXDMetrics(b *testing.B) {
	text := lxdMetricsOf(1000)
	b.SetBytes(int64(len(text)))
	for _, parse := range []struct {
		name string
		f    func(string) (map[string]Sample, error)
	}{{"lines", ParseLXDMetrics}, {"full", parseFull}} {
		b.Run(parse.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, err := parse.f(text)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
