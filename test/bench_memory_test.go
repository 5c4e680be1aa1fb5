package test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// daemonMemory is where a daemon's resident memory is (issue 20), from /proc and the Go
// collector's series in its /1.0/metrics.
type daemonMemory struct {
	// File is the binary and its libraries, mapped from their files.
	File int64

	// GoHeap is Go's heap in use (go_memstats_heap_inuse_bytes).
	GoHeap int64

	// GoOther is the rest Go's runtime holds and has not released: heap free but kept,
	// stacks, its own metadata (go_memstats_sys_bytes less heap_released and the heap
	// profile's bucket hash, less GoHeap). An upper bound: some of what the runtime maps it
	// never touches. The bucket hash (1.4 MiB) it barely touches: an idle daemon with heap
	// profiling off (GODEBUG=memprofilerate=0) had the same RSS within 0.2 MiB.
	GoOther int64

	// C is the anonymous memory Go does not account for: glibc malloc's, for dqlite, raft
	// and sqlite (the database and its WAL live in memory, in dqlite's VFS).
	C int64
}

// readDaemonMemory splits the resident memory of the daemon pid, whose metrics scrape is
// text.
func readDaemonMemory(b *testing.B, pid int, text string) daemonMemory {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	must(b, err)
	var anon, file int64
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}

		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "RssAnon:":
			anon = kb << 10
		case "RssFile:":
			file = kb << 10
		}
	}

	goResident := int64(sample(text, "go_memstats_sys_bytes") - sample(text, "go_memstats_heap_released_bytes") - sample(text, "go_memstats_buck_hash_sys_bytes"))
	heap := int64(sample(text, "go_memstats_heap_inuse_bytes"))
	return daemonMemory{File: file, GoHeap: heap, GoOther: goResident - heap, C: anon - goResident}
}

// String is the split as BenchmarkScale prints it.
func (m daemonMemory) String() string {
	return fmt.Sprintf("binary and libraries %.1f MiB, Go heap in use %.1f MiB, Go runtime's other %.1f MiB (heap kept, stacks, metadata), C (dqlite, sqlite) %.1f MiB",
		mib(m.File), mib(m.GoHeap), mib(m.GoOther), mib(m.C))
}
