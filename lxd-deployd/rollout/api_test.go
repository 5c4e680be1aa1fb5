package rollout

import (
	"context"
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// catalog is an LXD holding some images (by fingerprint and alias) and profiles.
type catalog struct {
	offline  error
	images   map[string]bool
	profiles map[string]bool
}

func (c catalog) Available() error { return c.offline }

func (c catalog) Image(project string, fingerprint string) (*lxdapi.Image, error) {
	if !c.images[fingerprint] {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "not found")
	}

	return &lxdapi.Image{Fingerprint: fingerprint}, nil
}

func (c catalog) ImageAlias(project string, alias string) (*lxdapi.ImageAliasesEntry, error) {
	if !c.images[alias] {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "not found")
	}

	return &lxdapi.ImageAliasesEntry{}, nil
}

func (c catalog) Profile(project string, name string) (*lxdapi.Profile, error) {
	if !c.profiles[name] {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "not found")
	}

	return &lxdapi.Profile{}, nil
}

// TestCheckLXDHas: a rollback is refused (400, naming what is missing) when LXD lost the
// revision's image (its fingerprint when pinned) or a profile; a remote image is not
// checked; an LXD that is offline refuses with its own error.
func TestCheckLXDHas(t *testing.T) {
	lxd := catalog{images: map[string]bool{"busybox": true, "abc123": true}, profiles: map[string]bool{"default": true}}
	template := func(source lxdapi.InstanceSource, profiles ...string) lxdapi.InstancesPost {
		t := lxdapi.InstancesPost{Source: source}
		t.Profiles = profiles
		return t
	}

	cases := []struct {
		name     string
		template lxdapi.InstancesPost
		refused  string
	}{
		{"alias", template(lxdapi.InstanceSource{Type: "image", Alias: "busybox"}, "default"), ""},
		{"lost alias", template(lxdapi.InstanceSource{Type: "image", Alias: "alpine"}), `image "alpine"`},
		{"pinned", template(lxdapi.InstanceSource{Type: "image", Alias: "alpine", Fingerprint: "abc123"}), ""},
		{"lost pin", template(lxdapi.InstanceSource{Type: "image", Alias: "busybox", Fingerprint: "def456"}), `image "def456"`},
		{"remote", template(lxdapi.InstanceSource{Type: "image", Alias: "alpine", Server: "https://images.example"}), ""},
		{"lost profile", template(lxdapi.InstanceSource{Type: "image", Alias: "busybox"}, "default", "gpu"), `profile "gpu"`},
	}

	for _, c := range cases {
		err := CheckLXDHas(lxd, "default", c.template, 3)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (!lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "revision 3")):
			t.Errorf("%s: %v, want a 400 naming %s", c.name, err, c.refused)
		}
	}

	lxd.offline = lxdapi.StatusErrorf(http.StatusServiceUnavailable, "LXD is unavailable")
	err := CheckLXDHas(lxd, "default", cases[0].template, 3)
	if !lxdapi.StatusErrorCheck(err, http.StatusServiceUnavailable) {
		t.Fatalf("an LXD offline: %v", err)
	}
}

// TestRollbackAPIRefusesBadRequests: what a rollback request cannot mean is a 400 before
// the database or LXD is asked anything.
func TestRollbackAPIRefusesBadRequests(t *testing.T) {
	no := false
	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "web"}
	for name, req := range map[string]api.DeploymentShapeRollbackPost{
		"negative revision":    {Revision: -1},
		"nothing to roll back": {Template: &no},
		"notes too long":       {Notes: strings.Repeat("x", 100000)},
	} {
		_, _, err := RollbackAPI(context.Background(), nil, nil, ref, req, false, api.DeploymentRequestor{})
		if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestActOnFinishedRollout: an action on a rollout that is over is a 409 that says to
// start a new one, whatever the action.
func TestActOnFinishedRollout(t *testing.T) {
	var e *Engine
	for _, action := range []string{"pause", "resume", "cancel", "promote", "abort"} {
		ro := db.Rollout{DeploymentRollout: api.DeploymentRollout{Number: 2, Status: api.RolloutComplete}}
		err := e.Act(context.Background(), ro, action, api.DeploymentRequestor{})
		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) || !strings.Contains(err.Error(), "start a new one") {
			t.Errorf("%s: %v", action, err)
		}
	}
}
