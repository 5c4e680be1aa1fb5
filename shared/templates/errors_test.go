package templates

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// An ExpandError crosses a process boundary as JSON and reads back the same: its message,
// its problems and warnings, and ErrLimit for a limit error.
func TestExpandErrorJSON(t *testing.T) {
	imports := map[string][]byte{
		"web.jinja":        []byte("resources: []\n"),
		"web.jinja.schema": []byte("properties:\n  a: {type: int}\n  b: {type: string}\n"),
	}

	_, err := Expand(context.Background(), []byte("resources:\n- {name: web, type: web.jinja, properties: {a: x, b: 1}}\n"), imports, Options{})
	var original *ExpandError
	if !errors.As(err, &original) || len(original.Problems) != 2 || len(original.Warnings) != 1 {
		t.Fatalf("expected two problems and a warning, got %#v", err)
	}

	limit := where{template: "spin.py", resource: "spin"}.limitError("step", 10, "do less")
	for _, e := range []*ExpandError{original, limit} {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}

		back := &ExpandError{}
		err = json.Unmarshal(data, back)
		if err != nil {
			t.Fatal(err)
		}

		if back.Error() != e.Error() || back.Detail() != e.Detail() || !reflect.DeepEqual(back.API(), e.API()) || errors.Is(back, ErrLimit) != errors.Is(e, ErrLimit) {
			t.Errorf("read back %s\nas %s", data, back.Detail())
		}
	}

	if !errors.Is(limit, ErrLimit) {
		t.Error("a limit error must wrap ErrLimit")
	}

	want := `resource "web" (template web.jinja): properties do not match web.jinja.schema (2 problems): "a" (type), "b" (type)`
	if original.Error() != want {
		t.Errorf("Error() = %s\nwant %s", original.Error(), want)
	}
}
