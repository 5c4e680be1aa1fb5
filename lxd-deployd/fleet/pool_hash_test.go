package fleet

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// poolHash changes with the template and, for an alias the image-change trigger watches,
// with the image it names: an image-change revision keeps the template, and its rollout must
// not be handed pool instances of the old image.
func TestPoolHash(t *testing.T) {
	shape := &db.Shape{DeploymentShape: api.DeploymentShape{DeploymentShapePut: api.DeploymentShapePut{
		InstanceTemplate: lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}},
		WarmPool:         &api.DeploymentShapeWarmPool{Size: 2, ReuseOnScaleIn: true},
	}}}

	plain := PoolHash(shape)
	if plain != backend.TemplateHash(shape.InstanceTemplate) {
		t.Fatal("without a known image the pool hash is the template hash")
	}

	shape.ImageFingerprint = "aaaa"
	first := PoolHash(shape)
	shape.ImageFingerprint = "bbbb"
	second := PoolHash(shape)
	if first == plain || first == second {
		t.Fatalf("the image must change the pool hash: %s %s %s", plain, first, second)
	}

	// A running instance of the current template goes back to the pool, and must run the
	// pool's image to be kept.
	row := &db.Instance{State: db.InstanceCreated, TemplateHash: plain}
	back := Reusable(shape, row)
	if back == nil || back.Hash != second || back.Image != "bbbb" {
		t.Fatalf("reusable: %+v", back)
	}

	// An outdated instance (a rollout's delete) is never pooled, though its template matches.
	shape.Revision = 4
	row.Revision = 3
	if Reusable(shape, row) != nil {
		t.Fatal("an outdated instance is never returned to the pool")
	}

	row.Revision = 4

	// A fingerprint-pinned template names its image itself.
	shape.InstanceTemplate.Source = lxdapi.InstanceSource{Type: "image", Fingerprint: "cccc"}
	if PoolHash(shape) != backend.TemplateHash(shape.InstanceTemplate) {
		t.Fatal("a template naming a fingerprint is hashed as it is")
	}

	row.TemplateHash = "other"
	if Reusable(shape, row) != nil {
		t.Fatal("an instance of another template is never returned to the pool")
	}
}
