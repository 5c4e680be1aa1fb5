package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/canonical/lxd/shared"
	lxdapi "github.com/canonical/lxd/shared/api"
	"golang.org/x/term"
	"gopkg.in/yaml.v2"
)

// maxEditInput bounds what edit reads from stdin.
const maxEditInput = 16 << 20

// editYAML runs the edit commands: it shows writable as YAML in $VISUAL/$EDITOR (or reads
// the YAML from stdin when stdin is not a terminal, for scripts), then hands the text to
// apply, which decodes it and sends the update. In the editor, a parse or server error
// reopens the editor on the text as the user left it, as lxc does; a 412 (changed since
// read) does not, since the change would be refused again.
func (a *app) editYAML(what string, writable any, apply func(data []byte) error) error {
	if !a.interactive() {
		a.log().Debug("reading YAML from stdin", "object", what)
		data, err := io.ReadAll(io.LimitReader(a.stdin, maxEditInput))
		if err != nil {
			return fmt.Errorf("read YAML from stdin: %w", err)
		}

		if len(bytes.TrimSpace(data)) == 0 {
			return fmt.Errorf("no YAML on stdin: nothing changed (pipe the new %s, as \"show\" prints it, into edit)", what)
		}

		return explain(apply(data))
	}

	current, err := yaml.Marshal(writable)
	if err != nil {
		return err
	}

	content := append([]byte(editHeader(what)), current...)
	for {
		content, err = shared.TextEditor("", content)
		if err != nil {
			return err
		}

		err = apply(content)
		if err == nil || lxdapi.StatusErrorCheck(err, http.StatusPreconditionFailed) {
			return explain(err)
		}

		fmt.Fprintf(a.stderr, "Error: %v\n", err)
		fmt.Fprint(a.stderr, "Press enter to open the editor again or ctrl+c to abort change")
		_, err = bufio.NewReader(a.stdin).ReadString('\n')
		if err != nil {
			return fmt.Errorf("edit aborted: nothing changed")
		}
	}
}

// interactive reports whether stdin is a terminal, so that edit may open an editor.
func (a *app) interactive() bool {
	f, ok := a.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func editHeader(what string) string {
	return fmt.Sprintf(`### This is a YAML representation of the %s.
### Any line starting with a '#' is ignored.
### Only the writable fields are shown; read-only fields (as "show" prints them) are
### accepted and ignored. A field left out is reset to its empty value.
`, what)
}

// decodeYAML decodes an edited object strictly, so that a misspelt field is an error
// instead of silently dropped.
func decodeYAML(data []byte, target any) error {
	err := yaml.UnmarshalStrict(data, target)
	if err != nil {
		return fmt.Errorf("YAML is not valid: %w", err)
	}

	return nil
}
