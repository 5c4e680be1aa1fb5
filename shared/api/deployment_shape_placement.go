package api

// DeploymentShapePlacement says where a shape's instances go in an LXD cluster
// (doc/placement.md). Absent, LXD places every instance as it likes.
type DeploymentShapePlacement struct {
	// LXD cluster members by name and cluster groups as "@group" the instances may go to
	// (default: every member)
	// Example: ["m1", "@gpu"]
	Targets []string `json:"targets,omitempty" yaml:"targets,omitempty"`

	// The failure domain kept even: "member" or "group" keeps the instance counts of any
	// two targeted members (or groups) within one of each other; "none" lets LXD decide
	// among the targets
	// Example: member
	Spread string `json:"spread,omitempty" yaml:"spread,omitempty"`

	// "strict" refuses a launch that would break the spread (409 saying why);
	// "permissive" (the default) places as evenly as it can and reports the skew
	// Example: permissive
	Rigor string `json:"rigor,omitempty" yaml:"rigor,omitempty"`
}

// Placement spreads and rigors.
const (
	PlacementSpreadMember = "member"
	PlacementSpreadGroup  = "group"
	PlacementSpreadNone   = "none"

	PlacementRigorStrict     = "strict"
	PlacementRigorPermissive = "permissive"
)

// PlacementGroupPrefix marks a cluster group among a placement's targets, as in LXD's
// `--target @group`.
const PlacementGroupPrefix = "@"

// DeploymentShapePlacementStatus is how a shape's instances sit over its failure domains
// (GET .../shapes/{s}, absent without a placement).
type DeploymentShapePlacementStatus struct {
	// Instances per failure domain (member or group name), every targeted domain listed
	// Example: {"m1": 2, "m2": 2, "m3": 1}
	Domains map[string]int `json:"domains" yaml:"domains"`

	// Largest minus smallest count over the reachable domains; above 1 the spread is
	// broken (a rebalance restores it)
	// Example: 1
	Skew int `json:"skew" yaml:"skew"`

	// Instances on members LXD reports offline
	// Example: 0
	Unreachable int `json:"unreachable" yaml:"unreachable"`
}

// Instance status lxd-deployd reports for an instance on an LXD member that is offline.
const InstanceStatusUnreachable = "Unreachable"
