package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (make test installs it), or a Chrome.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		path, err := exec.LookPath(name)
		if err == nil {
			return path
		}
	}

	return ""
}

// session is one headless Chromium of its own, as one person on one laptop: its own
// cookies. (Chromium's extra browser contexts stall on the daemon's request for a client
// certificate, so each session is a process; one starts in well under a second.)
type session struct {
	ctx  context.Context
	name string
}

// newSession starts headless Chromium, or skips saying why it cannot run (a failure with
// LXDTEST_REQUIRE=1, as make test sets).
func newSession(t *testing.T, name string) *session {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("LXDTEST_REQUIRE") != "" {
			t.Fatalf(format, args...)
		}

		t.Skipf(format, args...)
	}

	path := chromiumPath()
	if path == "" {
		unavailable("chromium is not installed (apt install chromium, or make deps-test): the browser tests need it")
	}

	// --no-sandbox: tests run as root, where Chromium's sandbox refuses to start. The
	// daemon's certificate is self-signed, as every lxd-deployd's is until an operator
	// trusts it in the browser.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.IgnoreCertErrors,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})

	// The first Run starts the browser; it must not carry a timeout (chromedp.Run).
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
	if err != nil {
		unavailable("chromium cannot run here: %v", err)
	}

	return &session{ctx: ctx, name: name}
}

// do runs actions with a timeout, failing the test with a screenshot on error.
func (s *session) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, actions...)
	if err != nil {
		s.screenshot(t, "failed-"+what)
		t.Fatalf("%s: %s: %v\npage: %s", s.name, what, err, s.text())
	}
}

// click clicks the first element matching a CSS selector, in the page and in one step,
// waiting up to timeout for it to exist. The pages redraw live (each event from the
// daemon), so a node found by one DevTools call and clicked by the next may be gone by
// then ("Could not find node with given id"), as chromedp.Click does it.
func (s *session) click(t *testing.T, what string, selector string, timeout time.Duration) {
	t.Helper()
	quoted, err := json.Marshal(selector)
	if err != nil {
		t.Fatal(err)
	}

	s.waitJS(t, what, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true; })()`, quoted), timeout)
}

// eval evaluates JavaScript (awaiting a promise) and returns its value.
func evalJS[T any](t *testing.T, s *session, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: evaluate %s: %v", s.name, expr, err)
	}

	return v
}

// waitJS waits until the expression is true in the page and returns how long that took.
// It polls from Go (every 20 ms) rather than with a promise in the page, so a page that
// re-renders meanwhile cannot leave the wait hanging.
func (s *session) waitJS(t *testing.T, what string, expr string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	waitUntil(t, s.name+": "+what, timeout, func() bool {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		return err == nil && ok
	}, every(20*time.Millisecond), showing(func() string {
		s.screenshot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		return fmt.Sprintf("last error: %v\npage: %s", err, s.text())
	}))

	return time.Since(start)
}

// text is the page's visible text, for failure messages.
func (s *session) text() string {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	return text
}

// screenshot saves the page under the test's artifact directory (kept with go test
// -artifacts) and logs where.
func (s *session) screenshot(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}

	path := filepath.Join(t.ArtifactDir(), name+".png")
	err = os.WriteFile(path, png, 0o644)
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("screenshot: %s", path)
	return path
}
