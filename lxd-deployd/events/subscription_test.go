package events

import (
	"net/http"
	"net/url"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestSubscription: the types asked for are served, logging to admins only (403), an
// unknown type is a 400; the project is the default one, the one named, or every project.
func TestSubscription(t *testing.T) {
	types, project, err := Subscription(url.Values{"type": {"operation,lifecycle,endpoints"}}, false)
	if err != nil || len(types) != 3 || project != "default" {
		t.Fatalf("three types: %v %q %v", types, project, err)
	}

	_, _, err = Subscription(url.Values{"type": {"logging"}}, false)
	if !lxdapi.StatusErrorCheck(err, http.StatusForbidden) {
		t.Fatalf("logging for a caller who is not an admin: %v", err)
	}

	types, _, err = Subscription(url.Values{"type": {"logging"}}, true)
	if err != nil || len(types) != 1 {
		t.Fatalf("logging for an admin: %v %v", types, err)
	}

	_, _, err = Subscription(url.Values{"type": {"operation,metrics"}}, true)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("an unknown type: %v", err)
	}

	types, project, err = Subscription(url.Values{"project": {"p1"}}, false)
	if err != nil || types != nil || project != "p1" {
		t.Fatalf("a named project, every type: %v %q %v", types, project, err)
	}

	_, project, _ = Subscription(url.Values{"project": {"p1"}, "all-projects": {"true"}}, false)
	if project != "" {
		t.Fatalf("all projects: %q", project)
	}
}
