package db

/*
#include <malloc.h>
#include <stdlib.h>

static void mallocStats(size_t out[4]) {
	struct mallinfo2 mi = mallinfo2();
	out[0] = mi.arena;    // bytes taken from the system with brk, every arena's heap
	out[1] = mi.hblkhd;   // bytes in chunks of their own (mmap)
	out[2] = mi.uordblks; // bytes in use
	out[3] = mi.fordblks; // bytes free but kept
}

static int mallocTrim(void) {
	return malloc_trim(0);
}

static int mallocMmapThreshold(int bytes) {
	return mallopt(M_MMAP_THRESHOLD, bytes);
}
*/
import "C"

import (
	"errors"
	"os"
	"strings"
)

// MallocStats is what the C allocator (glibc malloc: dqlite, raft, libuv and sqlite) holds.
type MallocStats struct {
	// Arenas is what malloc's arenas took from the system (brk and mmap'd heaps).
	Arenas uint64

	// Mapped is what large allocations hold in mappings of their own.
	Mapped uint64

	// InUse is what C code holds allocated.
	InUse uint64

	// Free is what the arenas keep freed but not given back to the system.
	Free uint64
}

// ReadMallocStats reads glibc's mallinfo2: the C side of the daemon's memory, which Go's
// runtime metrics do not see.
func ReadMallocStats() MallocStats {
	var out [4]C.size_t
	C.mallocStats(&out[0])
	return MallocStats{Arenas: uint64(out[0]), Mapped: uint64(out[1]), InUse: uint64(out[2]), Free: uint64(out[3])}
}

// trimMalloc gives the C allocator's free pages back to the system (malloc_trim), which
// free does only from the top of an arena. BenchmarkMemory tries it (MEMORY_BENCH_TRIM):
// every 10 s it returned 3 MiB, which the arenas took again.
func trimMalloc() {
	C.mallocTrim()
}

// mmapThreshold is the size from which the C allocator gives an allocation a mapping of its
// own, returned to the system when freed: glibc's default threshold (128 KiB) moves up to
// the size of the largest mapped block freed (up to 32 MiB), and every dqlite snapshot,
// a copy of the whole database, freed then taken again, moved it past itself. From then
// on each snapshot came from the arenas, whose free memory stays with the process
// (BenchmarkMemory at 1,000 instances: 21.6 MiB of C memory, the arenas keeping 24.5 MiB
// free, not all of it resident; with the threshold fixed, 11.7 MiB).
const mmapThreshold = 128 << 10

// TuneMalloc fixes the C allocator's mmap threshold (mmapThreshold) for the process,
// unless the environment sets glibc's malloc already (MALLOC_*_ variables or
// GLIBC_TUNABLES), which then wins. It returns whether it changed anything. Call it at
// start, before dqlite's threads allocate.
func TuneMalloc() (bool, error) {
	for _, env := range os.Environ() {
		if strings.HasPrefix(env, "MALLOC_") || strings.HasPrefix(env, "GLIBC_TUNABLES=") {
			return false, nil
		}
	}

	if C.mallocMmapThreshold(C.int(mmapThreshold)) != 1 {
		return false, errors.New("glibc refused the mmap threshold (mallopt)")
	}

	return true, nil
}

// mappedAfterReuse allocates size bytes in C, frees them and allocates them again, and
// returns how many bytes more the allocator then held in mappings of their own: size when
// the second block was mapped again, nothing when it came from the arenas, which keep its
// memory once freed (TestTuneMalloc).
func mappedAfterReuse(size int) uint64 {
	before := ReadMallocStats().Mapped
	C.free(C.malloc(C.size_t(size)))
	block := C.malloc(C.size_t(size))
	defer C.free(block)
	return ReadMallocStats().Mapped - before
}
