package fleet

import (
	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// poolHash is what a pool instance is made from, as the pool records it (template_hash of
// its rows): the shape's instance template and, when the template names an image alias
// the image-change trigger watches, the image that alias last named. A launch takes only a
// pool instance of its reservation's poolHash, so never one made from an older revision.
// The image matters because an image-change revision keeps the template as it was: without
// it, the pool made from the old image would be handed to the very rollout meant to
// replace that image, and never be remade.
func PoolHash(shape *db.Shape) string {
	template := shape.InstanceTemplate
	if shape.ImageFingerprint != "" && template.Source.Type == "image" && template.Source.Alias != "" && template.Source.Fingerprint == "" {
		template.Source.Fingerprint = shape.ImageFingerprint
	}

	return backend.TemplateHash(template)
}

// PoolReturn is a scale-in that returns its instance to the shape's warm pool.
type PoolReturn struct {
	ShapeID int64
	Shape   string
	Hash    string

	// image, when set, is the image the returned instance must run (PoolHash's image): an
	// instance made before the alias moved is deleted, not pooled.
	Image string
}

// Reusable says whether a deleted instance goes back to its shape's warm pool: the shape
// asks for it, its pool is short, and the instance is a plain running member of the latest
// revision and the current template (a governor socket is bound to the instance's name, so
// those go). An outdated instance is never pooled: a rollout deletes those, and its
// replacements must not be handed them back.
func Reusable(shape *db.Shape, row *db.Instance) *PoolReturn {
	pool := shape.WarmPool
	if pool == nil || !pool.ReuseOnScaleIn || shape.WarmPoolReady >= pool.Size || row.State != db.InstanceCreated || shapes.Outdated(*row, shape.Revision) || row.TemplateHash != backend.TemplateHash(shape.InstanceTemplate) || row.GovernorSocket {
		return nil
	}

	hash := PoolHash(shape)
	if hash == row.TemplateHash {
		return &PoolReturn{ShapeID: shape.ID, Shape: shape.Name, Hash: hash}
	}

	return &PoolReturn{ShapeID: shape.ID, Shape: shape.Name, Hash: hash, Image: shape.ImageFingerprint}
}
