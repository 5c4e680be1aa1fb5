package rollout

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestExactImages(t *testing.T) {
	shape := func(alias string, fingerprint string, trigger string) api.DeploymentShapePut {
		put := api.DeploymentShapePut{Rollout: api.DeploymentShapeRollout{Trigger: trigger}}
		put.InstanceTemplate.Source = lxdapi.InstanceSource{Type: "image", Alias: alias, Fingerprint: fingerprint}
		return put
	}

	watched := shape("web", "", api.RolloutTriggerImageChange)
	pinned := shape("web", "aaa", api.RolloutTriggerImageChange)
	manual := shape("web", "", "")

	// What a revision records.
	for _, c := range []struct {
		name   string
		before *api.DeploymentShapePut
		after  api.DeploymentShapePut
		args   RevisionArgs
		want   string
	}{
		{"a pinned template records its pin", &watched, pinned, RevisionArgs{}, "aaa"},
		{"an image change records the new image", &watched, watched, RevisionArgs{Image: true, ImageFingerprint: "bbb"}, "bbb"},
		{"an unchanged watched alias keeps the last seen image", &watched, watched, RevisionArgs{}, "last"},
		{"a new alias waits for the trigger's first look", &watched, shape("other", "", api.RolloutTriggerImageChange), RevisionArgs{}, ""},
		{"an alias nobody watches records nothing", &manual, manual, RevisionArgs{}, ""},
		{"a new shape", nil, watched, RevisionArgs{}, ""},
	} {
		if got := revisionImage(c.before, "last", c.after, c.args); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	// Which revisions make the same instances.
	if !sameInstances(watched, "aaa", pinned, "aaa") {
		t.Error("an alias that resolved to aaa and the pin of aaa make the same instances")
	}

	if sameInstances(watched, "bbb", pinned, "aaa") {
		t.Error("instances of bbb are outdated by a pin of aaa")
	}

	if !sameInstances(watched, "", watched, "bbb") {
		t.Error("an unknown image compares as the template alone")
	}

	if sameInstances(watched, "aaa", shape("other", "", api.RolloutTriggerImageChange), "aaa") {
		t.Error("another alias is another template")
	}

	// The template a rollback restores.
	rev := api.DeploymentShapeRevision{Shape: watched, ImageFingerprint: "aaa"}
	if got := PinnedTemplate(rev).Source; got.Fingerprint != "aaa" || got.Alias != "web" {
		t.Errorf("pinned: %+v", got)
	}

	rev.ImageFingerprint = ""
	if got := PinnedTemplate(rev).Source; got.Fingerprint != "" {
		t.Errorf("no image recorded, no pin: %+v", got)
	}
}
