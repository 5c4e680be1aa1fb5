package test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestTrafficRequestsPerInstance (issue 35, "traffic feeds scaling"): the reference
// governor (requests_per_instance 5) scales a shape behind the private door to its request
// rate, 1 -> 3 (its maximum) under about 20 requests/s and back to 1, not 0, when the load
// stops; meanwhile the web view's shape page shows each instance's state at the door and
// the shape's request rate, to an admin and to a read-only session (without buttons).
func TestTrafficRequestsPerInstance(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	rw := newSession(t, "admin")
	ro := newSession(t, "read-only")
	z := newZeroEnvGoverned(t, 100, "45s", false)
	z.runReferenceGovernor(t, "shapes:\n  web:\n    requests_per_instance: 5\n")

	// The shape starts at zero: the first request wakes it (a scale request the governor
	// follows).
	if a := ask(); a.err != nil || a.code != 200 {
		t.Fatalf("the first request at zero: %v", a)
	}

	z.waitUntil(t, "one instance", time.Minute, func() bool { return z.size() == 1 })

	adminID := newIdentity(t)
	trustIdentity(t, z.admin, adminID, "ui-admin", "client")
	u := newCLIUser(t, z.d)
	shapePage := "https://" + z.d.HTTPSAddress + "/ui/#/deployments/dep1/shapes/web"
	signIn := func(s *session, args ...string) {
		link := strings.TrimSpace(u.ok(append([]string{"ui", "link", "--certificate", adminID.Fingerprint}, args...)...))
		s.do(t, "open link", chromedp.Navigate(link))
		s.waitJS(t, "signed in", `document.getElementById("identity").textContent.includes("ui-admin")`, 10*time.Second)
		s.do(t, "open the shape page", chromedp.Navigate(shapePage))
	}

	signIn(rw)
	signIn(ro, "--read-only")
	door := func(s *session) string {
		return evalJS[string](t, s, `(document.getElementById("front-door") || {}).textContent || ""`)
	}

	// servingShown: the summary and the instance table both say n instances serve.
	servingShown := func(n int) string {
		return fmt.Sprintf(`(() => { const d = document.getElementById("front-door"); if (!d || !d.textContent.includes("serving %d")) return false;
			return [...document.querySelectorAll("table .badge")].filter((b) => b.textContent === "serving").length === %d; })()`, n, n)
	}

	phase(t, "the page shows the door", func(t *testing.T) {
		rw.waitJS(t, "one instance serving", servingShown(1), 30*time.Second)
		for _, header := range []string{"Traffic", "Requests"} {
			if !evalJS[bool](t, rw, fmt.Sprintf(`[...document.querySelectorAll("th")].some((th) => th.textContent === %q)`, header)) {
				t.Fatalf("the instance table has no %s column: %s", header, rw.text())
			}
		}

		rw.screenshot(t, "shape-door-one")
	})

	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// About 20 requests/s, one at a time: for 5 per instance, 4 instances (3, the maximum).
		defer wg.Done()
		for ctx.Err() == nil {
			a := ask()
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()

	phase(t, "scale up to the request rate", func(t *testing.T) {
		start := time.Now()
		z.waitUntil(t, "the governor scaling to 3", 3*time.Minute, func() bool { return z.size() == 3 })
		t.Logf("measured: 1 -> 3 instances %v after the load started (requests_per_instance 5, metrics every 1s)", time.Since(start).Round(100*time.Millisecond))
		// Both sessions show the door's request rate (the page reads it again every 5 s) and
		// three serving instances.
		for _, s := range []*session{rw, ro} {
			s.waitJS(t, "three serving", servingShown(3), 2*time.Minute)
			s.waitJS(t, "a request rate", `(() => { const m = (document.getElementById("front-door") || {}).textContent?.match(/requests ([0-9.]+)\/s/); return !!m && Number(m[1]) > 0; })()`, time.Minute)
		}

		t.Logf("measured: the page says %q", door(rw))
		// As TestUIBrowser: nothing that changes things (comparing revisions reads only).
		if n := evalJS[int](t, ro, `[...document.querySelectorAll("main button, main form")].filter((e) => !e.closest('form[aria-label="Compare two revisions"]')).length`); n != 0 {
			t.Fatalf("the read-only session's shape page has %d buttons or forms that change things", n)
		}

		rw.screenshot(t, "shape-door-three")
	})

	stopLoad()
	wg.Wait()
	mu.Lock()
	n, sample := failed(answers)
	t.Logf("measured: %d requests through the door during the scale up, %d failed %v", len(answers), n, sample)
	mu.Unlock()

	phase(t, "scale down to one, not zero", func(t *testing.T) {
		draining := false
		z.waitUntil(t, "the governor scaling back to 1", 3*time.Minute, func() bool {
			draining = draining || strings.Contains(rw.text(), "draining")
			return z.size() == 1
		})
		rw.waitJS(t, "one instance serving", servingShown(1), time.Minute)
		t.Logf("measured: the page showed an instance draining during the scale down: %v", draining)
		// Five metrics events without requests: requests_per_instance leaves zero to
		// idle_to_zero, which this shape does not have.
		time.Sleep(5 * time.Second)
		if size := z.size(); size != 1 {
			t.Fatalf("with no requests the shape went to %d instances: requests_per_instance keeps 1", size)
		}

		data, err := os.ReadFile(z.governorLog)
		must(t, err)
		for _, want := range []string{"request rate", "for a target of 5 per instance", "kept at 1: scaling to zero is idle_to_zero's"} {
			if !strings.Contains(string(data), want) {
				t.Errorf("the governor's log does not say %q", want)
			}
		}
	})
}
