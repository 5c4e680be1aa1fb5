package loadgen

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for p, want := range map[float64]time.Duration{50: 5, 99: 10, 10: 1, 0: 1, 100: 10} {
		if got := Percentile(d, p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}

	if Percentile(nil, 99) != 0 {
		t.Error("no durations: want 0")
	}

	if d[0] != 5 {
		t.Error("Percentile sorted its argument in place")
	}
}

func TestClosedLoopCountsFailures(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	rate, failed := ClosedLoop(t, []string{ok.URL}, 2, 200*time.Millisecond)
	if rate <= 0 || failed != 0 {
		t.Fatalf("rate %v, failed %d: want requests and no failure", rate, failed)
	}

	fake := &testing.T{}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer bad.Close()
	_, failed = ClosedLoop(fake, []string{bad.URL}, 1, 100*time.Millisecond)
	if failed == 0 || !fake.Failed() {
		t.Fatalf("a 502 counted %d failures (benchmark failed: %v): want every request failed", failed, fake.Failed())
	}
}

func TestSchedOfThisProcess(t *testing.T) {
	before := SchedOf(os.Getpid())
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
	}

	used := SchedOf(os.Getpid()).Sub(before)
	if used.Ran <= 0 {
		t.Fatalf("ran %v: want the CPU this test burnt", used.Ran)
	}

	if per := (Sched{Ran: 1000, Waited: 500, Slices: 3}).Per(10); per.Ran != 100 || per.Waited != 50 || per.Slices != 300 {
		t.Fatalf("Per(10) = %+v", per)
	}
}
