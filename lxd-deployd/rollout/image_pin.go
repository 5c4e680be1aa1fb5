package rollout

import (
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Exact images (seed 002, use case 2: "rollback ... including exact versions of images
// referenced in that state"). A revision records the image its template resolved to; a
// rollback to it pins that image in the restored template (source.fingerprint beside the
// alias, which LXD prefers to the alias), so new instances and the rollout are made from
// it even when the alias now names another image.

// localAlias says a template source names an image by an alias of the daemon's own LXD
// and no fingerprint: the image it makes instances from is whatever the alias names.
func localAlias(source lxdapi.InstanceSource) bool {
	return source.Type == "image" && source.Alias != "" && source.Fingerprint == "" && source.Server == ""
}

// sameAlias says two sources name the same alias of the same LXD.
func sameAlias(a lxdapi.InstanceSource, b lxdapi.InstanceSource) bool {
	return a.Type == b.Type && a.Alias == b.Alias && a.Server == b.Server && a.Project == b.Project
}

// WatchesAlias says the image trigger watches the alias of a shape's template (automatic or
// not): the shape's image_fingerprint is then what the alias named when last checked.
func WatchesAlias(put api.DeploymentShapePut) bool {
	has, _ := put.Rollout.TriggerOf(api.RolloutTriggerImageChange)
	return has && localAlias(put.InstanceTemplate.Source)
}

// revisionImage is the image a new revision records: the fingerprint its template names,
// the one the image trigger just saw, or, for an unchanged watched alias, the one the
// shape last saw. Without an image trigger nobody watches the alias, and instances of one
// revision may be made from different images: nothing is recorded rather than a guess.
func revisionImage(before *api.DeploymentShapePut, beforeImage string, after api.DeploymentShapePut, args RevisionArgs) string {
	source := after.InstanceTemplate.Source
	switch {
	case source.Type == "image" && source.Fingerprint != "" && source.Server == "":
		return source.Fingerprint
	case args.Image:
		return args.ImageFingerprint
	case before != nil && WatchesAlias(after) && sameAlias(before.InstanceTemplate.Source, source):
		return beforeImage
	}

	return ""
}

// imageOf is the image a revision makes instances from, "" when not known.
func imageOf(put api.DeploymentShapePut, recorded string) string {
	if put.InstanceTemplate.Source.Fingerprint != "" {
		return put.InstanceTemplate.Source.Fingerprint
	}

	return recorded
}

// sameInstances says revision a (recorded image aImage) and b make the same instances: the
// same template but for the pinned fingerprint, and the same image when both are known.
// An unknown image (a revision older than the record, an alias nobody watches) compares
// as the template alone, as before images were recorded.
func sameInstances(a api.DeploymentShapePut, aImage string, b api.DeploymentShapePut, bImage string) bool {
	aImage, bImage = imageOf(a, aImage), imageOf(b, bImage)
	a.InstanceTemplate.Source.Fingerprint, b.InstanceTemplate.Source.Fingerprint = "", ""
	if shapes.TemplateChanged(a, b) {
		return false
	}

	return aImage == "" || bImage == "" || aImage == bImage
}

// PinnedTemplate is the instance template a rollback to a revision restores: the
// revision's, with the image it recorded pinned when its template names an alias.
func PinnedTemplate(rev api.DeploymentShapeRevision) lxdapi.InstancesPost {
	t := rev.Shape.InstanceTemplate
	if localAlias(t.Source) && rev.ImageFingerprint != "" {
		t.Source.Fingerprint = rev.ImageFingerprint
	}

	return t
}
