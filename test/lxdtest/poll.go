package lxdtest

import "time"

// Poll calls cond every interval until it holds and says whether it did within timeout.
// It is the one polling loop of the end-to-end suites: the test package's waitUntil and
// poll are built on it, and this package's own waits use it directly.
func Poll(timeout time.Duration, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}

		time.Sleep(interval)
	}

	return true
}
