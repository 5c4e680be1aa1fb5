package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// uiURL is a page of the web view on the test daemon.
func uiURL(env *governorEnv, fragment string) string {
	return "https://" + env.d.HTTPSAddress + "/ui/#" + fragment
}

// shapeReady is a page condition: the deployment page shows shape web's bar with the
// given size against bounds 1..3.
func shapeBar(current int) string {
	return fmt.Sprintf(`(() => { const b = document.querySelector('[data-shape="web"] .bar'); return !!b && b.dataset.current === "%d" && b.dataset.min === "1" && b.dataset.max === "3"; })()`, current)
}

// TestUIBrowser runs the web view in headless Chromium against a real daemon and a private
// LXD (doc/ui.md): sign in with a ui link, watch a shape live, launch, delete and roll out
// from the browser, and check that read-only sessions, CSRF, used and expired links are
// refused by the daemon itself.
func TestUIBrowser(t *testing.T) {
	rw := newSession(t, "admin")
	env := newRolloutEnv(t, 1, 3) // it rolls web out: replacements are named web-r<rev>-*, outside the env's prefix
	env.launch(t, env.gov, env.name("a"))

	// The browser acts as a trust store entry: an admin certificate that never touches it.
	adminID := newIdentity(t)
	trustIdentity(t, env.admin, adminID, "ui-admin", "client")
	u := newCLIUser(t, env.d)
	// On the unix socket a link needs no certificate named: it acts as the daemon's own
	// identity for local admins (issue 32 item 13; TestUISessionSecurity checks the rest).
	if local := strings.TrimSpace(u.ok("ui", "link")); !strings.HasPrefix(local, "https://"+env.d.HTTPSAddress+"/ui/#login=") {
		t.Fatalf("ui link on the unix socket printed %q", local)
	}
	u.fails([]string{"expiry", "24h"}, "ui", "link", "--certificate", adminID.Fingerprint, "--expiry", "48h")
	link := strings.TrimSpace(u.ok("ui", "link", "--certificate", adminID.Fingerprint))
	if !strings.HasPrefix(link, "https://"+env.d.HTTPSAddress+"/ui/#login=") {
		t.Fatalf("ui link printed %q", link)
	}

	t.Run("sign in with a ui link", func(t *testing.T) {
		rw.do(t, "open link", chromedp.Navigate(link))
		rw.waitJS(t, "signed in as ui-admin", `document.getElementById("identity").textContent.includes("ui-admin")`, 10*time.Second)
		rw.waitJS(t, "deployment dep1 listed", `!!document.querySelector('a[href="#/deployments/dep1"]')`, 10*time.Second)
		if strings.Contains(evalJS[string](t, rw, "location.href"), "login=") {
			t.Fatal("the link's secret stayed in the address bar")
		}

		// The cookie is invisible to scripts (HttpOnly).
		if cookies := evalJS[string](t, rw, "document.cookie"); cookies != "" {
			t.Fatalf("document.cookie = %q: the session cookie must be HttpOnly", cookies)
		}

		// The session's binding is kept in the page's origin storage, which pages on other
		// ports cannot read: the requests above and the events websocket carried it.
		if binding := evalJS[string](t, rw, `localStorage.getItem("lxd-deployd-session-binding") || ""`); binding == "" {
			t.Fatal("the page keeps no session binding")
		}

		rw.screenshot(t, "deployments")
	})

	t.Run("deployment page shows bounds and instance count", func(t *testing.T) {
		rw.click(t, "open deployment", `a[href="#/deployments/dep1"]`, 10*time.Second)
		rw.waitJS(t, "bar of web at 1 in [1, 3]", shapeBar(1), 10*time.Second)
		label := evalJS[string](t, rw, `document.querySelector('[data-shape="web"] .bar').getAttribute("aria-label")`)
		if label != "web: 1 instance, minimum 1, maximum 3" {
			t.Fatalf("bar label %q", label)
		}

		rw.screenshot(t, "deployment")
	})

	t.Run("a launch through the API appears without a reload", func(t *testing.T) {
		evalJS[int](t, rw, "window.__notReloaded = 1")
		start := time.Now()
		env.launch(t, env.gov, env.name("b"))
		launched := time.Since(start)
		rw.waitJS(t, "bar of web at 2", shapeBar(2)+" && window.__notReloaded === 1", 5*time.Second)
		shown := time.Since(start)
		t.Logf("launch operation took %s; the open page showed it %s after the API call (%s after the operation ended)", launched, shown, shown-launched)
		if shown-launched > time.Second {
			t.Errorf("the launch took %s after its operation to show: want within a second", shown-launched)
		}
	})

	t.Run("launch from the keyboard", func(t *testing.T) {
		name := env.name("kb")
		rw.do(t, "type a name and press Enter", chromedp.SendKeys(chromedp.ID("launch-web"), name+kb.Enter))
		rw.waitJS(t, "bar of web at 3", shapeBar(3), 30*time.Second)
		// The page follows the launch's operation to its end and says so.
		rw.waitJS(t, "launch done", `document.getElementById("messages").textContent.includes("Launch an instance of web: done")`, 30*time.Second)
		if _, ok := env.lxdInstances(t)[name]; !ok {
			t.Fatalf("LXD has no instance %s after the launch from the browser", name)
		}

		if typed := evalJS[string](t, rw, `document.getElementById("launch-web").value`); typed != "" {
			t.Fatalf("the name field still holds %q after the launch", typed)
		}

		// At the maximum a launch is the API's 409, shown as is.
		rw.do(t, "launch over the maximum", chromedp.SendKeys(chromedp.ID("launch-web"), env.name("over")+kb.Enter))
		rw.waitJS(t, "the API's error", `document.getElementById("messages").textContent.includes("at its scaling maximum (3)")`, 10*time.Second)
		rw.screenshot(t, "at-maximum-error")
	})

	shapeFragment := "/deployments/dep1/shapes/web"
	t.Run("delete from the shape page", func(t *testing.T) {
		rw.do(t, "open shape", chromedp.Navigate(uiURL(env, shapeFragment)))
		victim := env.name("kb")
		rw.waitJS(t, "instance listed", fmt.Sprintf(`!!document.querySelector('button[aria-label="Delete instance %s"]')`, victim), 10*time.Second)
		rw.click(t, "delete", fmt.Sprintf(`button[aria-label="Delete instance %s"]`, victim), 10*time.Second)
		rw.waitJS(t, "instance gone", fmt.Sprintf(`!document.querySelector('button[aria-label="Delete instance %s"]')`, victim), 30*time.Second)
		if _, ok := env.lxdInstances(t)[victim]; ok {
			t.Fatalf("LXD still has %s after the delete from the browser", victim)
		}
	})

	t.Run("a rollout started from the button completes", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			if put.InstanceTemplate.Config == nil {
				put.InstanceTemplate.Config = map[string]string{}
			}

			put.InstanceTemplate.Config["user.ui-test"] = "2"
		})
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		rw.waitJS(t, "outdated instances shown", `document.querySelector('[aria-label="web instance counts"]').textContent.includes("outdated 2")`, 10*time.Second)
		rw.click(t, "start rollout", "#start-rollout", 10*time.Second)
		rw.waitJS(t, "rollout complete", `(() => { const c = document.querySelector('table caption'); const t = [...document.querySelectorAll("table")].find((t) => t.caption && t.caption.textContent.startsWith("Rollouts")); return !!t && t.tBodies[0].rows[0].cells[1].textContent === "complete"; })()`, 90*time.Second)
		rw.waitJS(t, "timeline shows the new revision as latest", fmt.Sprintf(`document.querySelector(".timeline li.current")?.dataset.revision === "%d"`, shape.Revision), 10*time.Second)
		rw.screenshot(t, "shape-after-rollout")

		// LXD holds the replacements, named for the new revision, and nothing outdated.
		prefix := fmt.Sprintf("web-r%d-", shape.Revision)
		instances := env.instancesByName(t)
		if len(instances) != 2 {
			t.Fatalf("want 2 instances after the rollout, got %d", len(instances))
		}

		for name, i := range instances {
			if !strings.HasPrefix(name, prefix) || i.Outdated {
				t.Fatalf("instance %s (revision %d, outdated %v) after the rollout to %d", name, i.Revision, i.Outdated, shape.Revision)
			}

			lxdInstance, _, err := env.lxdConn.GetInstance(name)
			if err != nil || lxdInstance.Config["user.ui-test"] != "2" {
				t.Fatalf("LXD's %s does not carry the new template: %v", name, err)
			}
		}

		// Roll back from the timeline: a new revision, named for what it restored.
		rw.click(t, "roll back", fmt.Sprintf(`button[aria-label="Roll back web to revision %d"]`, shape.Revision-1), 10*time.Second)
		rw.waitJS(t, "rollback revision latest", fmt.Sprintf(`document.querySelector(".timeline li.current")?.dataset.revision === "%d" && document.querySelector(".timeline li.current").textContent.includes("rollback to %d")`, shape.Revision+1, shape.Revision-1), 10*time.Second)

		// The diff between two revisions names the changed field.
		rw.click(t, "diff", `form[aria-label="Compare two revisions"] button`, 10*time.Second)
		rw.waitJS(t, "diff shown", `document.getElementById("diff-result").textContent.includes("instance_template.config.user.ui-test")`, 10*time.Second)
		rw.screenshot(t, "shape-rollback-diff")
	})

	t.Run("pause and resume a rollout from its buttons", func(t *testing.T) {
		// Instances must stay ready a while before they count, so the rollout is slow
		// enough to catch (a new revision; the instances are already outdated by the
		// rollback above).
		env.setShape(t, func(put *api.DeploymentShapePut) { put.Rollout.MinReady = "3s" })
		rw.waitJS(t, "start button back", `!!document.getElementById("start-rollout")`, 10*time.Second)
		rw.click(t, "start rollout", "#start-rollout", 10*time.Second)
		rw.waitJS(t, "pause button", `!!document.querySelector('button[aria-label="pause rollout 2"]')`, 10*time.Second)
		rw.waitJS(t, "live progress", `!!document.querySelector('progress[aria-label="rollout 2 progress"]')`, 10*time.Second)
		rw.click(t, "pause", `button[aria-label="pause rollout 2"]`, 10*time.Second)
		rw.waitJS(t, "resume button", `!!document.querySelector('button[aria-label="resume rollout 2"]')`, 10*time.Second)
		rollout, err := env.admin.GetDeploymentShapeRollout("dep1", "web", 2)
		must(t, err)
		if rollout.Status != "paused" {
			t.Fatalf("after Pause the rollout is %s", rollout.Status)
		}

		rw.screenshot(t, "rollout-paused")
		rw.click(t, "resume", `button[aria-label="resume rollout 2"]`, 10*time.Second)
		rw.waitJS(t, "rollout 2 complete", `(() => { const t = [...document.querySelectorAll("table")].find((t) => t.caption && t.caption.textContent.startsWith("Rollouts")); return !!t && t.tBodies[0].rows[0].cells[0].textContent === "2" && t.tBodies[0].rows[0].cells[1].textContent === "complete"; })()`, 60*time.Second)
		for name, i := range env.instancesByName(t) {
			if i.Outdated {
				t.Fatalf("instance %s is outdated after the resumed rollout completed", name)
			}
		}
	})

	t.Run("read-only session has no buttons and its writes are refused", func(t *testing.T) {
		roLink := strings.TrimSpace(u.ok("ui", "link", "--read-only", "--certificate", adminID.Fingerprint))
		ro := newSession(t, "read-only")
		ro.do(t, "open link", chromedp.Navigate(roLink))
		ro.waitJS(t, "signed in read-only", `document.getElementById("identity").textContent.includes("read-only")`, 10*time.Second)
		ro.do(t, "open shape", chromedp.Navigate(uiURL(env, shapeFragment)))
		ro.waitJS(t, "shape shown", `!!document.querySelector(".timeline")`, 10*time.Second)
		writes := evalJS[int](t, ro, `[...document.querySelectorAll("main button, main form")].filter((e) => !e.closest('form[aria-label="Compare two revisions"]')).length`)
		if writes != 0 {
			t.Fatalf("a read-only session sees %d buttons or forms that change things", writes)
		}

		ro.screenshot(t, "read-only-shape")
		before := len(env.lxdInstances(t))
		// A forged write, with the page's session binding and a made-up CSRF token: the
		// daemon refuses it.
		answer := evalJS[string](t, ro, fmt.Sprintf(`fetch("/1.0/deployments/dep1/shapes/web/instances/%s", {method: "POST", headers: {"X-Lxd-Deployd-Csrf": "forged", "X-Lxd-Deployd-Session": localStorage.getItem("lxd-deployd-session-binding")}}).then(async (r) => r.status + " " + (await r.json()).error)`, env.name("forged")))
		if !strings.HasPrefix(answer, "403 ") || !strings.Contains(answer, "read-only") {
			t.Fatalf("forged write from a read-only session answered %q", answer)
		}

		if after := len(env.lxdInstances(t)); after != before {
			t.Fatalf("LXD went from %d to %d instances after a refused write", before, after)
		}

		// Signing out ends the session in the daemon: the cookie no longer works, even with
		// the binding the page held.
		binding := evalJS[string](t, ro, `localStorage.getItem("lxd-deployd-session-binding")`)
		ro.click(t, "sign out", "#logout", 10*time.Second)
		ro.waitJS(t, "signed out", `!!document.querySelector(".signin")`, 10*time.Second)
		answer = evalJS[string](t, ro, fmt.Sprintf(`fetch("/1.0/deployments", {headers: {"X-Lxd-Deployd-Session": %q}}).then((r) => String(r.status))`, binding))
		if answer != "403" {
			t.Fatalf("after signing out GET /1.0/deployments answered %s", answer)
		}
	})

	t.Run("writes without the CSRF token are refused", func(t *testing.T) {
		answer := evalJS[string](t, rw, fmt.Sprintf(`fetch("/1.0/deployments/dep1/shapes/web/instances/%s", {method: "POST", headers: {"X-Lxd-Deployd-Session": localStorage.getItem("lxd-deployd-session-binding")}}).then(async (r) => r.status + " " + (await r.json()).error)`, env.name("nocsrf")))
		if !strings.HasPrefix(answer, "403 ") || !strings.Contains(answer, "X-Lxd-Deployd-Csrf") {
			t.Fatalf("write without the CSRF header answered %q", answer)
		}
	})

	t.Run("a used or expired link is refused", func(t *testing.T) {
		again := newSession(t, "reuse")
		again.do(t, "open the used link", chromedp.Navigate(link))
		again.waitJS(t, "refused", `document.getElementById("messages").textContent.includes("unknown, used or expired") && !!document.querySelector(".signin")`, 10*time.Second)
		again.screenshot(t, "used-link")

		short := strings.TrimSpace(u.ok("ui", "link", "--expiry", "1s", "--certificate", adminID.Fingerprint))
		time.Sleep(1100 * time.Millisecond)
		late := newSession(t, "expired")
		late.do(t, "open the expired link", chromedp.Navigate(short))
		late.waitJS(t, "refused", `document.getElementById("messages").textContent.includes("unknown, used or expired")`, 10*time.Second)
	})

	t.Run("deployments of another project", func(t *testing.T) {
		project := env.prefix + "-p"
		must(t, env.lxdConn.CreateProject(lxdapi.ProjectsPost{Name: project, ProjectPut: lxdapi.ProjectPut{Config: map[string]string{"features.images": "false", "features.profiles": "false"}}}))
		t.Cleanup(func() { _ = env.lxdConn.DeleteProject(project) })
		inProject := env.admin.UseProject(project)
		must(t, inProject.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "elsewhere"}}))
		t.Cleanup(func() { _ = inProject.DeleteDeployment("elsewhere", false) })

		rw.do(t, "open deployments", chromedp.Navigate(uiURL(env, "/deployments")))
		rw.waitJS(t, "the project field", `!!document.getElementById("project")`, 10*time.Second)
		evalJS[int](t, rw, `document.getElementById("project").value = "", 1`)
		rw.do(t, "choose project", chromedp.SendKeys(chromedp.ID("project"), project+kb.Enter))
		link := fmt.Sprintf(`a[href="#/deployments/elsewhere?project=%s"]`, project)
		rw.waitJS(t, "the project's deployment", fmt.Sprintf(`!!document.querySelector('%s') && !document.querySelector('a[href="#/deployments/dep1"]')`, link), 10*time.Second)
		rw.click(t, "the project's deployment link", link, 10*time.Second)
		rw.waitJS(t, "its page", `document.querySelector("main h1").textContent === "Deployment elsewhere"`, 10*time.Second)
	})

	t.Run("accessibility basics", func(t *testing.T) {
		// Whatever the pages do must pass the Content-Security-Policy: a violation (an inline
		// style, say) would be a feature broken for every user.
		evalJS[int](t, rw, `document.addEventListener("securitypolicyviolation", (e) => (window.__csp = window.__csp || []).push(e.violatedDirective + " " + e.blockedURI)), 1`)
		for _, fragment := range []string{"/deployments", "/deployments/dep1", shapeFragment, "/operations", "/cluster"} {
			rw.do(t, "open "+fragment, chromedp.Navigate(uiURL(env, fragment)))
			rw.waitJS(t, "page rendered", `!!document.querySelector("main h1")`, 10*time.Second)
			problems := evalJS[[]string](t, rw, `(() => {
				const p = [];
				if (!document.documentElement.lang) p.push("no lang on html");
				if (document.querySelectorAll("main h1").length !== 1) p.push("not one h1");
				for (const el of document.querySelectorAll("input, select, textarea"))
					if (el.labels.length === 0 && !el.getAttribute("aria-label")) p.push("unlabelled " + el.outerHTML);
				for (const el of document.querySelectorAll("button, a"))
					if (!(el.getAttribute("aria-label") || el.textContent).trim()) p.push("nameless " + el.outerHTML);
				for (const el of document.querySelectorAll("[role=img]"))
					if (!el.getAttribute("aria-label")) p.push("image without a text " + el.outerHTML);
				for (const t of document.querySelectorAll("table"))
					if (!t.caption) p.push("table without caption");
				return p;
			})()`)
			if len(problems) > 0 {
				t.Errorf("%s: %s", fragment, strings.Join(problems, "; "))
			}
		}

		if violations := evalJS[[]string](t, rw, "window.__csp || []"); len(violations) > 0 {
			t.Errorf("Content-Security-Policy violations: %s", strings.Join(violations, "; "))
		}

		// The keyboard reaches the skip link first, and it moves focus to the content.
		rw.do(t, "load the shape page afresh", chromedp.Navigate("about:blank"), chromedp.Navigate(uiURL(env, shapeFragment)))
		rw.waitJS(t, "page rendered", `!!document.querySelector("main h1")`, 10*time.Second)
		rw.do(t, "tab", chromedp.KeyEvent(kb.Tab))
		if focused := evalJS[string](t, rw, "document.activeElement.className"); focused != "skip" {
			t.Fatalf("the first Tab focuses %q, want the skip link", focused)
		}

		rw.do(t, "enter", chromedp.KeyEvent(kb.Enter))
		rw.waitJS(t, "focus in main", `document.activeElement.id === "main"`, 5*time.Second)

		// Narrow screens: the page fits a phone's width.
		rw.do(t, "phone", chromedp.EmulateViewport(390, 844))
		rw.waitJS(t, "no horizontal scroll", `document.documentElement.scrollWidth <= 390 + 1`, 5*time.Second)
		rw.screenshot(t, "phone-shape")
	})
}
