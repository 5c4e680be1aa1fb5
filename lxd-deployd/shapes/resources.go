package shapes

import (
	"fmt"
	"maps"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/canonical/lxd/shared/units"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// LiveKeys are the instance config keys LXD 5.0 applies to a running container without a
// restart ("Live update: yes" in LXD 5.0's instance options reference, limits section). A
// revision that differs from an instance's only in these (and in fields that do not make
// instances) is brought to that instance in place.
var LiveKeys = map[string]bool{
	"limits.cpu":                  true,
	"limits.cpu.allowance":        true,
	"limits.cpu.priority":         true,
	"limits.disk.priority":        true,
	"limits.memory":               true,
	"limits.memory.enforce":       true,
	"limits.memory.swap":          true,
	"limits.memory.swap.priority": true,
	"limits.network.priority":     true,
	"limits.processes":            true,
}

// liveKey says whether a config key applies live; hugepages limits do too.
func liveKey(key string) bool {
	return LiveKeys[key] || strings.HasPrefix(key, "limits.hugepages.")
}

// Resize returns the shape's writable fields with a resize's limits in its template. The
// check against resource_bounds is here, so the caller runs it in the transaction that
// stores the result: a 409 names the bound and the knob, a 400 a value LXD would not take.
// A governor (any caller but an admin) may resize only a limit the shape bounds, a 403
// otherwise: without bounds nothing but LXD's own ceiling would hold it (issue 32 applied
// limits.memory=1EiB live), while an admin could set the template through the shape anyway.
func Resize(put api.DeploymentShapePut, req api.DeploymentShapeResourcesPut, governor bool) (api.DeploymentShapePut, error) {
	limits := req.Limits()
	if len(limits) == 0 {
		return put, lxdapi.StatusErrorf(http.StatusBadRequest, "a resize needs limits.cpu, limits.memory or both")
	}

	for _, key := range validate.ResourceKeys {
		value, ok := limits[key]
		if !ok {
			continue
		}

		_, err := validate.ParseResource(key, value)
		if err != nil {
			return put, lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
		}

		bound, bounded := put.ResourceBounds[key]
		if !bounded && governor {
			return put, lxdapi.StatusErrorf(http.StatusForbidden, "%s has no resource_bounds on this shape, and governors may resize only a bounded limit: an admin sets resource_bounds[%q] (a minimum, a maximum or both) to allow it", key, key)
		}

		if !bounded {
			continue
		}

		err = validate.ResourceWithin(key, value, bound)
		if err != nil {
			return put, lxdapi.StatusErrorf(http.StatusConflict, "%v", err)
		}
	}

	// A copy: the caller's shape (and its revision) keeps the old template.
	put.InstanceTemplate.Config = maps.Clone(put.InstanceTemplate.Config)
	if put.InstanceTemplate.Config == nil {
		put.InstanceTemplate.Config = map[string]string{}
	}

	maps.Copy(put.InstanceTemplate.Config, limits)
	return put, nil
}

// CauseImageChange is the cause of a revision recorded because the alias a shape's template
// names now points at another image: the template is unchanged, yet its instances need the
// new image, which no in-place update can give them (InPlace).
const CauseImageChange = "image-change"

// InPlace says whether an instance made from revision from can be brought to the latest
// revision in place (LiveChanges from its revision to the latest), given the causes of
// the revisions after from: one that changed the image needs new instances. A cause
// unknown (a pruned revision) counts as not in place.
func InPlace(from int, revisions map[int]api.DeploymentShapePut, causes map[int]string, latest int) (map[string]string, bool) {
	for r := from + 1; r <= latest; r++ {
		cause, ok := causes[r]
		if !ok || cause == CauseImageChange {
			return nil, false
		}
	}

	fromPut, ok := revisions[from]
	latestPut, ok2 := revisions[latest]
	if !ok || !ok2 {
		return nil, false
	}

	return LiveChanges(fromPut, latestPut)
}

// LiveChanges says whether an instance made from revision from can be brought to revision
// to in place: every difference is either in a field that does not make instances (bounds,
// rollout settings, ...) or in a live config key. It returns the live keys that change,
// with their new values ("" for a key to remove).
func LiveChanges(from api.DeploymentShapePut, to api.DeploymentShapePut) (map[string]string, bool) {
	const prefix = "instance_template.config."
	live := map[string]string{}
	for _, c := range Changes(from, to) {
		if boundsOrDescription[topField(c.Field)] {
			continue
		}

		key, isConfig := strings.CutPrefix(c.Field, prefix)
		if !isConfig || !liveKey(key) {
			return nil, false
		}

		live[key] = to.InstanceTemplate.Config[key]
	}

	return live, true
}

// ShrinkMarginMin and ShrinkMarginPercent make the headroom a lowered memory limit must
// leave above what the instance uses: the larger of 16MiB and 10% of the usage. Usage moves
// between the reading and the write; the margin keeps the cgroup from reclaiming into the
// workload's own pages (and, with no swap, from refusing or OOM-killing).
const (
	ShrinkMarginMin     = 16 << 20
	ShrinkMarginPercent = 10
)

// ShrinkMargin is the headroom for a given usage in bytes.
func ShrinkMargin(usage int64) int64 {
	return max(ShrinkMarginMin, usage*ShrinkMarginPercent/100)
}

// SafeMemory decides whether an instance using usage bytes may get the memory limit value:
// a raise (or no limit) always may; a lower limit must leave ShrinkMargin above the usage.
// The reason says why not, in the words the operation and the activity log use.
func SafeMemory(value string, usage int64) (bool, string) {
	if value == "" {
		return true, ""
	}

	limit, err := validate.ParseResource(api.LimitMemory, value)
	if err != nil {
		return false, err.Error()
	}

	margin := ShrinkMargin(usage)
	if usage+margin <= limit {
		return true, ""
	}

	return false, fmt.Sprintf("memory usage %s plus margin %s is above the new limit %s: left at its limit, retried later",
		units.GetByteSizeStringIEC(usage, 0), units.GetByteSizeStringIEC(margin, 0), value)
}

// VMMemory refuses a live memory raise of a virtual machine past the size it booted with:
// LXD cannot hotplug memory beyond it.
func VMMemory(value string, boot string) (bool, string) {
	if value == "" || boot == "" {
		return true, ""
	}

	limit, err1 := validate.ParseResource(api.LimitMemory, value)
	booted, err2 := validate.ParseResource(api.LimitMemory, boot)
	if err1 != nil || err2 != nil || limit <= booted {
		return true, ""
	}

	return false, fmt.Sprintf("virtual machine booted with limits.memory %s: LXD cannot raise its memory live past that, restart it (or let a rollout replace it) to apply %s", boot, value)
}
