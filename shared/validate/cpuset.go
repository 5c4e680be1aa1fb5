package validate

import (
	"fmt"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// MaxCPUs bounds limits.cpu wherever the daemon takes it (a shape's template, a resize,
// resource_bounds, a templated config): a count from 1 to MaxCPUs, or a set of CPUs
// numbered from 0 to MaxCPUs-1. LXD expands a set into one entry per CPU before it looks
// at the host, so a set such as 0-3000000 costs LXD memory in proportion to its width (300
// MiB in issue 32; a range overflowing int64 made it grow until the OOM killer took it).
// 4096 is a Linux kernel's usual largest CPU number (CONFIG_NR_CPUS) and a fixed figure,
// so the client, the CLI and every cluster member agree on it whatever host they run on.
// LXD 5.0 itself takes a set naming CPUs the host lacks (it pins to those present), and
// so does the daemon, up to the ceiling.
const MaxCPUs = 4096

// ParseCPULimit reads limits.cpu as LXD takes it and returns how many CPUs it gives: a
// count ("2") or a set of CPUs ("0-1,3", pinned), each CPU named once (newer LXD refuses
// repeats, "Cannot define CPU multiple times"), ranges low to high. Numbers are read digit
// by digit and refused as soon as they reach MaxCPUs, so no input overflows; the work is
// linear in the value's length and the memory a fixed bitmap.
func ParseCPULimit(value string) (int64, error) {
	const hint = "use a count from 1 to 4096 such as 2, or a set of CPUs numbered 0 to 4095 such as 0-3 or 0,2"
	if value == "" {
		return 0, fmt.Errorf("%s is empty: %s", api.LimitCPU, hint)
	}

	if !strings.ContainsAny(value, ",-") {
		n, ok := cpuNumber(value, MaxCPUs+1)
		if !ok || n < 1 {
			return 0, fmt.Errorf("%s %q is not a CPU count from 1 to %d: %s", api.LimitCPU, clip(value), MaxCPUs, hint)
		}

		return int64(n), nil
	}

	var seen [MaxCPUs / 64]uint64
	var count int64
	for part := range strings.SplitSeq(value, ",") {
		first, last, isRange := strings.Cut(part, "-")
		low, ok := cpuNumber(first, MaxCPUs)
		if !ok {
			return 0, fmt.Errorf("%s %q: %q is not a CPU number from 0 to %d: %s", api.LimitCPU, clip(value), clip(first), MaxCPUs-1, hint)
		}

		high := low
		if isRange {
			high, ok = cpuNumber(last, MaxCPUs)
			if !ok {
				return 0, fmt.Errorf("%s %q: %q is not a CPU number from 0 to %d: %s", api.LimitCPU, clip(value), clip(last), MaxCPUs-1, hint)
			}

			if high < low {
				return 0, fmt.Errorf("%s %q: the range %d-%d goes down: write it low to high", api.LimitCPU, clip(value), low, high)
			}
		}

		for cpu := low; cpu <= high; cpu++ {
			word, bit := cpu/64, uint64(1)<<(cpu%64)
			if seen[word]&bit != 0 {
				return 0, fmt.Errorf("%s %q names CPU %d more than once: name each CPU once", api.LimitCPU, clip(value), cpu)
			}

			seen[word] |= bit
			count++
		}
	}

	return count, nil
}

// cpuNumber reads a non-empty run of ASCII digits below ceiling; it stops at the first
// digit that would reach the ceiling, so it never overflows.
func cpuNumber(s string, ceiling int) (int, bool) {
	if s == "" {
		return 0, false
	}

	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}

		n = n*10 + int(c-'0')
		if n >= ceiling {
			return 0, false
		}
	}

	return n, true
}

// clip shortens a value quoted back in an error: a hostile value may be as long as a
// request body.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}

	return s[:most] + "..."
}

// TemplateLimits checks the resource limits of a shape's instance template as LXD would
// take them and within the daemon's ceiling (MaxCPUs), bounds or none: every path that
// stores a template (shape create and update, a resize, a templated config, a rollback)
// goes through here, so LXD is never sent a value that costs it memory.
func TemplateLimits(config map[string]string) error {
	value := config[api.LimitCPU]
	if value == "" {
		return nil
	}

	_, err := ParseCPULimit(value)
	if err != nil {
		return fmt.Errorf("instance_template.config: %w", err)
	}

	return nil
}
