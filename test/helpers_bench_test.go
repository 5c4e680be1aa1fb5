package test

import (
	"sort"
	"time"
)

// median returns the middle of values, for benchmarks that print a typical time.
func median(values []time.Duration) time.Duration {
	sorted := append([]time.Duration{}, values...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}
