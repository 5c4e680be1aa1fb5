package db

/*
#include <malloc.h>

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
*/
import "C"

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

// TrimMalloc gives the C allocator's free memory back to the system (malloc_trim): glibc
// returns a thread arena's free pages only from its top, and dqlite frees what a snapshot
// or a large commit took in the middle of one.
func TrimMalloc() {
	C.mallocTrim()
}
