package backend

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// CheckMarkerEnv is the environment variable ExecCheck callers set to a value unique to
// one run, so that KillChecks can find the run's processes after a timeout.
const CheckMarkerEnv = "LXD_DEPLOYD_CHECK"

// KillCheck kills the processes of one check run (KillChecks with one marker).
func KillCheck(marker string) int {
	return KillChecks([]string{marker})
}

// KillChecks kills every process on the host whose environment holds
// LXD_DEPLOYD_CHECK=<one of markers>, and returns how many it killed. An exec without
// websockets has no control channel and LXD cannot cancel it, so a check that outlives its
// timeout is killed from the host: the daemon runs beside LXD (its unix socket), as root,
// and the container's processes are the host's. A process that sets its own environment
// anew escapes this (a daemonising check), as it would escape LXD's own signal forwarding.
// One sweep reads every process's environment (a thousand containers' worth: this was
// 56% of the daemon's CPU when checks timed out one by one), so the checker sweeps once
// for all the checks that timed out since its last tick.
func KillChecks(markers []string) int {
	if len(markers) == 0 {
		return 0
	}

	want := make(map[string]bool, len(markers))
	for _, m := range markers {
		want[m] = true
	}

	prefix := []byte(CheckMarkerEnv + "=")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}

	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}

		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, prefix) {
			continue
		}

		for _, v := range bytes.Split(env, []byte{0}) {
			value, found := bytes.CutPrefix(v, prefix)
			if found && want[string(value)] {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}

				break
			}
		}
	}

	return killed
}
