package main

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateExpand = flag.Bool("update", false, "rewrite the expand.txt files of the template corpus")

// TestExpandDMCorpus runs "lxd-deploy expand" on every Deployment Manager style case of the
// corpus (dm-*) and compares what it prints (stdout, then the warnings and the error as
// stderr shows them) with the case's expand.txt. "go test ./cli -run TestExpandDMCorpus
// -update" rewrites them: review the diff.
func TestExpandDMCorpus(t *testing.T) {
	t.Setenv("LXD_DEPLOY_CONF", t.TempDir()) // No user configuration (default registry) applies.
	dirs, err := filepath.Glob(filepath.Join(corpus, "dm-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no dm-* cases in %s: %v", corpus, err)
	}

	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
			root := a.command()
			root.SetArgs([]string{"expand", filepath.Join(dir, "config.yaml"), "--deployment", "demo"})
			err := root.Execute()
			if err != nil {
				stderr.WriteString("Error: " + errorText(err) + "\n")
			}

			got := stdout.String()
			if stderr.Len() > 0 {
				got += "--- stderr\n" + stderr.String()
			}

			file := filepath.Join(dir, "expand.txt")
			if *updateExpand {
				err := os.WriteFile(file, []byte(got), 0o644)
				if err != nil {
					t.Fatal(err)
				}

				return
			}

			want, err := os.ReadFile(file)
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("no %s: run go test ./cli -run TestExpandDMCorpus -update and review it", file)
			}

			if err != nil {
				t.Fatal(err)
			}

			if got != string(want) {
				t.Errorf("lxd-deploy expand printed:\n%s\nwant (%s):\n%s", got, file, want)
			}
		})
	}
}
