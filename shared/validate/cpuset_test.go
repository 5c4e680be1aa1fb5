package validate

import (
	"math/big"
	"regexp"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestParseCPULimit: counts and sets LXD takes, within MaxCPUs; issue 32's hostile sets
// (a range that overflowed the old count to 2, a range LXD expands into 300 MiB) are
// refused with the ceiling in the message.
func TestParseCPULimit(t *testing.T) {
	tests := []struct {
		value string
		count int64
		says  string // "" for valid
	}{
		{value: "1", count: 1},
		{value: "2", count: 2},
		{value: "4096", count: 4096},
		{value: "0-1,3", count: 3},
		{value: "0", says: "not a CPU count from 1 to 4096"},
		{value: "3", count: 3},
		{value: "5", count: 5},
		{value: "0-4095", count: 4096},
		{value: "4095", count: 4095},
		{value: "007", count: 7},
		{value: "0-9223372036854775806,0-9223372036854775806,0-3", says: `"9223372036854775806" is not a CPU number from 0 to 4095`},
		{value: "0-3000000", says: `"3000000" is not a CPU number from 0 to 4095`},
		{value: "4097", says: "not a CPU count from 1 to 4096"},
		{value: "99999999999999999999999", says: "not a CPU count"},
		{value: "0-4096", says: "not a CPU number"},
		{value: "0-3,2", says: "names CPU 2 more than once"},
		{value: "3-1", says: "goes down"},
		{value: "0,,1", says: `"" is not a CPU number`},
		{value: "-1", says: "not a CPU number"},
		{value: "1-", says: "not a CPU number"},
		{value: "0-1-2", says: "not a CPU number"},
		{value: "+1", says: "not a CPU count"},
		{value: " 1", says: "not a CPU count"},
		{value: "", says: "empty"},
		{value: strings.Repeat("1", 100), says: "..."},
	}

	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			n, err := ParseCPULimit(tt.value)
			if tt.says == "" && (err != nil || n != tt.count) {
				t.Fatalf("got %d, %v; want %d", n, err, tt.count)
			}

			if tt.says != "" && (err == nil || !strings.Contains(err.Error(), tt.says)) {
				t.Fatalf("got %d, %v; want an error saying %q", n, err, tt.says)
			}
		})
	}
}

// TestTemplateLimits: a template's limits.cpu is held to the ceiling with or without
// resource_bounds (issue 32: without bounds it was never parsed), on every path that
// validates a shape.
func TestTemplateLimits(t *testing.T) {
	put := api.DeploymentShapePut{ScalingMaximum: 1, InstanceTemplate: lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Config: map[string]string{"limits.cpu": "0-3000000"}}}}
	err := Shape(put)
	if err == nil || !strings.Contains(err.Error(), "instance_template.config: limits.cpu") {
		t.Fatalf("an unbounded template with limits.cpu 0-3000000: %v", err)
	}

	for _, ok := range []string{"", "2", "0-1"} {
		put.InstanceTemplate.Config["limits.cpu"] = ok
		err = Shape(put)
		if err != nil {
			t.Fatalf("limits.cpu %q: %v", ok, err)
		}
	}
}

// lxdCPUSyntax is the syntax check of LXD's validate.IsValidCPUSet (canonical/lxd
// shared/validate; its module is not imported here for one expression). The rest of LXD's
// rule (a single number at least 1, no CPU named twice) the fuzz target checks itself.
var lxdCPUSyntax = regexp.MustCompile(`^(?:[0-9]+(?:[,-][0-9]+)?)(?:,[0-9]+(?:[,-][0-9]+)*)?$`)

// FuzzCPULimit: whatever the input, the parser answers without overflowing or allocating
// in proportion to a range; what it accepts LXD's own validator accepts, and the count is
// the number of distinct CPUs named, each below MaxCPUs (checked against arbitrary
// precision arithmetic, so an overflow in the parser cannot hide).
func FuzzCPULimit(f *testing.F) {
	for _, seed := range []string{"2", "0-3", "0-1,3", "0-9223372036854775806,0-9223372036854775806,0-3", "0-3000000", "4096", "4097", "0-3,0-3"} {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, value string) {
		n, err := ParseCPULimit(value)
		if err != nil {
			if n != 0 {
				t.Fatalf("%q refused with a count %d", value, n)
			}

			return
		}

		if !lxdCPUSyntax.MatchString(value) {
			t.Fatalf("%q accepted (%d CPUs) but LXD's syntax refuses it", value, n)
		}

		if n < 1 || n > MaxCPUs {
			t.Fatalf("%q accepted with %d CPUs, outside 1..%d", value, n, MaxCPUs)
		}

		if !strings.ContainsAny(value, ",-") {
			count, ok := new(big.Int).SetString(value, 10)
			if !ok || count.Cmp(big.NewInt(n)) != 0 {
				t.Fatalf("count %q read as %d", value, n)
			}

			return
		}

		seen := map[int64]bool{}
		for _, part := range strings.Split(value, ",") {
			first, last, isRange := strings.Cut(part, "-")
			if !isRange {
				last = first
			}

			low, ok1 := new(big.Int).SetString(first, 10)
			high, ok2 := new(big.Int).SetString(last, 10)
			limit := big.NewInt(MaxCPUs)
			if !ok1 || !ok2 || low.Sign() < 0 || high.Cmp(limit) >= 0 || low.Cmp(high) > 0 || strings.ContainsAny(first+last, "+-_") {
				t.Fatalf("%q accepted, but its part %q is not a range of CPUs below %d", value, part, MaxCPUs)
			}

			for cpu := low.Int64(); cpu <= high.Int64(); cpu++ {
				if seen[cpu] {
					t.Fatalf("%q accepted, but names CPU %d twice", value, cpu)
				}

				seen[cpu] = true
			}
		}

		if int64(len(seen)) != n {
			t.Fatalf("%q read as %d CPUs, names %d", value, n, len(seen))
		}
	})
}
