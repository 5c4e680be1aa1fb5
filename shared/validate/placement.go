package validate

import (
	"fmt"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// placementTargetsMax bounds a placement's target list: far more than any cluster has
// groups, short enough that a typo cannot make every launch walk a huge list.
const placementTargetsMax = 64

// ShapePlacement checks a shape's placement object (absent is fine): known spread and
// rigor, targets that are member names or "@group" names, each once. Whether the members
// and groups exist is the daemon's question (it asks LXD), not a syntax one.
func ShapePlacement(p *api.DeploymentShapePlacement) error {
	if p == nil {
		return nil
	}

	switch p.Spread {
	case "", api.PlacementSpreadMember, api.PlacementSpreadGroup, api.PlacementSpreadNone:
	default:
		return fmt.Errorf("placement.spread %q is not known: use member, group or none", p.Spread)
	}

	switch p.Rigor {
	case "", api.PlacementRigorPermissive:
	case api.PlacementRigorStrict:
		if p.Spread == api.PlacementSpreadNone {
			return fmt.Errorf("placement.rigor strict needs a spread to keep: set placement.spread to member or group, or drop rigor")
		}
	default:
		return fmt.Errorf("placement.rigor %q is not known: use strict or permissive", p.Rigor)
	}

	if len(p.Targets) > placementTargetsMax {
		return fmt.Errorf("placement.targets lists %d targets: at most %d", len(p.Targets), placementTargetsMax)
	}

	seen := map[string]bool{}
	for _, target := range p.Targets {
		name, group := strings.CutPrefix(target, api.PlacementGroupPrefix)
		err := placementName(name)
		if err != nil {
			return fmt.Errorf("placement.targets entry %q: %w", target, err)
		}

		if seen[target] {
			return fmt.Errorf("placement.targets lists %q twice: list each member or group once", target)
		}

		seen[target] = true
		if p.Spread == api.PlacementSpreadGroup && !group {
			return fmt.Errorf("placement.spread group keeps cluster groups even: name groups in placement.targets (@%s), not members (%s)", name, name)
		}
	}

	return nil
}

// placementName checks an LXD member or cluster group name: what LXD accepts, less what
// would be ambiguous in a target list or a URL.
func placementName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name: give an LXD member name or @ and a cluster group name")
	}

	if len(name) > 63 {
		return fmt.Errorf("name is longer than 63 characters")
	}

	for _, r := range name {
		ok := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '.' || r == '_'
		if !ok {
			return fmt.Errorf("invalid character %q: LXD member and group names use letters, digits, '-', '.' and '_'", r)
		}
	}

	return nil
}
