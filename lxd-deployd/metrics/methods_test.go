package metrics

import (
	"net/http"
	"slices"
	"testing"
)

// FuzzMethod: whatever a client sends as its method, the label is one of the ten fixed
// values, and it is the method itself exactly when the method is a known one.
func FuzzMethod(f *testing.F) {
	for _, m := range Methods {
		f.Add(m)
	}

	f.Add("get")
	f.Add("PROPFIND")
	f.Add("")
	f.Add("GET ")
	f.Add("G\x00ET")
	f.Fuzz(func(t *testing.T, method string) {
		got := Method(method)
		if got != MethodOther && !slices.Contains(Methods, got) {
			t.Fatalf("Method(%q) = %q: not a fixed label", method, got)
		}

		if (got == method) != slices.Contains(Methods, method) {
			t.Fatalf("Method(%q) = %q", method, got)
		}
	})
}

func TestMethodsAreTheStandardOnes(t *testing.T) {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if Method(m) != m {
			t.Errorf("the API's method %s is folded to %s", m, Method(m))
		}
	}

	if len(Methods) != 9 {
		t.Errorf("Methods: %v", Methods)
	}
}
