package backend

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// CheckMarkerEnv is the environment variable ExecCheck callers set to a value unique to
// one run, so that KillCheck can find the run's processes after a timeout.
const CheckMarkerEnv = "LXD_DEPLOYD_CHECK"

// KillCheck kills every process on the host whose environment holds
// LXD_DEPLOYD_CHECK=marker, and returns how many it killed. An exec without websockets has
// no control channel and LXD cannot cancel it, so a check that outlives its timeout is
// killed from the host: the daemon runs beside LXD (its unix socket), as root, and the
// container's processes are the host's. A process that sets its own environment anew
// escapes this (a daemonising check), as it would escape LXD's own signal forwarding.
func KillCheck(marker string) int {
	want := []byte(CheckMarkerEnv + "=" + marker + "\x00")
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
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}

		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}

	return killed
}
