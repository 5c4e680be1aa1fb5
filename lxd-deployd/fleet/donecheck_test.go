package fleet

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instanceWriters are the calls that write an instance's record or make and remove LXD
// instances of shapes (warm pool instances included): outside tests, only package fleet
// makes them. Health verdicts (db.SetInstanceHealth, package health) and a revision's
// relabelling of equivalent instances (db.SetInstancesRevision, package rollout) are no
// instance's life and stay with their owners.
var instanceWriters = regexp.MustCompile(`\b(db\.(CreateInstance|SetInstanceState|DeleteInstance|SetInstanceHook|SetInstanceHookAction|SetInstanceKeepsRolloutSize|SetInstanceGovernorSocket|SetInstanceRevisionFrom|MarkInstanceReplacement|CreatePoolInstance|TakePoolInstance|ClaimPoolInstance|SetPoolInstanceReady|DeletePoolInstance)|backend\.(CreateInstance|DeleteInstance|CreatePoolInstance|TakePoolInstance|ReturnToPool))\(`)

// TestDoneCheck holds issue 18's done-check (doc/internals.md): outside tests, the instance
// writers above appear only under lxd-deployd/fleet, and package fleet imports neither
// package main nor lxd-deployd/rollout. A new engine that needs them goes through the
// fleet (an interface of its own, as rollout/shims.go does), not around it.
func TestDoneCheck(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}

	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}

		if d.IsDir() {
			// db/dbtest is a helper package of tests (imported by _test.go files only).
			if path == here || path == filepath.Join(root, "db", "dbtest") || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}

			return nil
		}

		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}

		for line, text := range writerCalls(t, path) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d: %s: instance records and LXD instances of shapes are written only in lxd-deployd/fleet; call the fleet instead", rel, line, text)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, out)
	}

	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/lxd-deployd/lxd-deployd/lxd-deployd" || strings.HasPrefix(dep, "github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout") {
			t.Errorf("package fleet depends on %s: it must see the daemon and the rollout engine only through interfaces it declares", dep)
		}
	}
}

// writerCalls returns the lines of a Go file that call an instance writer, by line number.
func writerCalls(t *testing.T, path string) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = f.Close() }()
	found := map[int]string{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1024*1024), 1024*1024)
	for n := 1; scanner.Scan(); n++ {
		text := strings.TrimSpace(scanner.Text())
		if !strings.HasPrefix(text, "//") && instanceWriters.MatchString(text) {
			found[n] = text
		}
	}

	if scanner.Err() != nil {
		t.Fatal(scanner.Err())
	}

	return found
}

// TestWriterCallsFindsCalls: the done-check sees a call, and not a comment naming one.
func TestWriterCallsFindsCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engine.go")
	text := "package x\n\n// db.DeleteInstance( is named here only\nfunc f() { _ = backend.DeleteInstance(ctx, c, p, n) }\nfunc g() { _ = db.SetInstanceHealth(ctx, tx, 1, h) }\n"
	err := os.WriteFile(path, []byte(text), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	found := writerCalls(t, path)
	if len(found) != 1 || found[4] == "" {
		t.Fatalf("calls found: %v, want line 4 only", found)
	}
}
