package db

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// childEnv, when set, makes the test binary run one of the children below instead of its
// tests: what they measure is the process's own (its memory, its C allocator's settings),
// so each runs in a process of its own.
const childEnv = "DB_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "memory-workload":
		err := memoryWorkload(os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "malloc-probe":
		tuned, err := TuneMalloc()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}

		fmt.Println(strconv.FormatBool(tuned), mappedAfterReuse(4<<20))
	default:
		fmt.Fprintln(os.Stderr, "unknown", childEnv)
		os.Exit(2)
	}

	os.Exit(0)
}
