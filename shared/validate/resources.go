package validate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/canonical/lxd/shared/units"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ResourceKeys are the LXD limits resource_bounds may bound and a resize may set.
var ResourceKeys = []string{api.LimitCPU, api.LimitMemory}

// ParseResource turns an LXD limit value into a number that orders: a CPU count for
// limits.cpu (a set such as "0-1,3" counts its CPUs), bytes for limits.memory. Memory
// percentages are refused: bounds and resizes take absolute sizes, since a percentage of
// the host means a different size on every member.
func ParseResource(key string, value string) (int64, error) {
	switch key {
	case api.LimitCPU:
		return ParseCPULimit(value)
	case api.LimitMemory:
		if strings.HasSuffix(value, "%") {
			return 0, fmt.Errorf("%s %q is a percentage: use an absolute size such as 512MiB", key, clip(value))
		}

		n, err := units.ParseByteSizeString(value)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s %q is not a size: use LXD's units, such as 512MiB or 2GiB", key, clip(value))
		}

		return n, nil
	}

	return 0, fmt.Errorf("%q cannot be resized: use one of %s", key, strings.Join(ResourceKeys, ", "))
}

// ResourceBounds checks a shape's resource_bounds, and that its template's own limits lie
// within them (a template outside its bounds could never be resized back in).
func ResourceBounds(put api.DeploymentShapePut) error {
	keys := make([]string, 0, len(put.ResourceBounds))
	for key := range put.ResourceBounds {
		keys = append(keys, key)
	}

	sort.Strings(keys)
	for _, key := range keys {
		bound := put.ResourceBounds[key]
		if bound.Minimum == "" && bound.Maximum == "" {
			return fmt.Errorf("resource_bounds[%q] needs a minimum, a maximum or both", key)
		}

		var low, high int64
		var err error
		if bound.Minimum != "" {
			low, err = ParseResource(key, bound.Minimum)
			if err != nil {
				return fmt.Errorf("resource_bounds[%q].minimum: %w", key, err)
			}
		}

		if bound.Maximum != "" {
			high, err = ParseResource(key, bound.Maximum)
			if err != nil {
				return fmt.Errorf("resource_bounds[%q].maximum: %w", key, err)
			}

			if high < low {
				return fmt.Errorf("resource_bounds[%q]: the minimum %s is above the maximum %s", key, bound.Minimum, bound.Maximum)
			}
		}

		value, ok := put.InstanceTemplate.Config[key]
		if !ok || value == "" {
			continue
		}

		err = ResourceWithin(key, value, bound)
		if err != nil {
			return fmt.Errorf("instance_template.config: %w", err)
		}
	}

	return nil
}

// ResourceWithin checks one limit value against its bound; the error names the bound and
// the knob to turn.
func ResourceWithin(key string, value string, bound api.DeploymentShapeResourceBound) error {
	n, err := ParseResource(key, value)
	if err != nil {
		return err
	}

	if bound.Minimum != "" {
		low, err := ParseResource(key, bound.Minimum)
		if err == nil && n < low {
			return fmt.Errorf("%s %s is below the shape's resource_bounds minimum (%s): lower resource_bounds[%q].minimum first or ask for more", key, value, bound.Minimum, key)
		}
	}

	if bound.Maximum != "" {
		high, err := ParseResource(key, bound.Maximum)
		if err == nil && n > high {
			return fmt.Errorf("%s %s is above the shape's resource_bounds maximum (%s): raise resource_bounds[%q].maximum first or ask for less", key, value, bound.Maximum, key)
		}
	}

	return nil
}
