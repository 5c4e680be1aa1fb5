package db

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTuneMalloc: a large C block freed and taken again (a dqlite snapshot, the copy of the
// database) is mapped again, and so given back to the system when freed, once TuneMalloc
// ran; glibc's defaults keep it in the arenas. Settings the environment gives glibc win.
func TestTuneMalloc(t *testing.T) {
	const block = 4 << 20
	probe := func(env ...string) (bool, uint64) {
		cmd := exec.Command(os.Args[0])
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "MALLOC_") && !strings.HasPrefix(e, "GLIBC_TUNABLES=") {
				cmd.Env = append(cmd.Env, e)
			}
		}

		cmd.Env = append(cmd.Env, append(env, childEnv+"=malloc-probe")...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("malloc probe: %v", err)
		}

		var changed bool
		var mapped uint64
		_, err = fmt.Sscan(string(out), &changed, &mapped)
		if err != nil {
			t.Fatalf("malloc probe said %q: %v", out, err)
		}

		return changed, mapped
	}

	changed, mapped := probe()
	if !changed || mapped < block {
		t.Errorf("tuned: changed %v, %d bytes mapped again, want the second block of %d bytes mapped", changed, mapped, block)
	}

	changed, mapped = probe("GLIBC_TUNABLES=glibc.malloc.arena_max=16")
	if changed || mapped != 0 {
		t.Errorf("with GLIBC_TUNABLES set: changed %v, %d bytes mapped again, want glibc's own behaviour (the block taken from the arena)", changed, mapped)
	}
}
