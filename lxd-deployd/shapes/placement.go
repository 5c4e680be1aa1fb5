package shapes

import (
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The placement rules of a shape across an LXD cluster (doc/placement.md), as pure
// functions over what LXD says of its members and what the records say of the instances:
// the launch, the fleet's victims, autohealing, drain and rebalance all ask here, so that
// spread means one thing on every path.

// Member is what placement needs to know of an LXD cluster member.
type Member struct {
	Name string

	// Online is false when LXD reports the member offline (or evacuated): it takes no
	// instances and its instances are unreachable.
	Online bool

	// Groups are the cluster groups the member is in.
	Groups []string

	// Closed is true for an online member being drained: its instances are reachable, but
	// it takes no new ones.
	Closed bool
}

// takes says whether a member can take a new instance.
func (m Member) takes() bool {
	return m.Online && !m.Closed
}

// Domain is one failure domain of a shape's placement: a member (spread member), a
// cluster group (spread group), or every targeted member at once (spread none).
type Domain struct {
	Name string

	// Members are the targeted members in the domain, by name.
	Members []string

	// Count is the shape's counted instances on the domain's members.
	Count int

	// Available is true when at least one of its members is online.
	Available bool
}

// spread returns the placement's spread with its default (member).
func spread(p *api.DeploymentShapePlacement) string {
	if p == nil || p.Spread == "" {
		return api.PlacementSpreadMember
	}

	return p.Spread
}

// strict says whether the placement refuses launches that break its spread.
func strict(p *api.DeploymentShapePlacement) bool {
	return p != nil && p.Rigor == api.PlacementRigorStrict
}

// ErrUnknownTarget marks a placement target the cluster view lacks (a 400 when the view
// is fresh). The view every probe keeps may predate a group or member made a moment ago:
// whoever refuses for it reads the cluster again first (fleet.reserveLaunch).
var ErrUnknownTarget = errors.New("unknown placement target")

// unknownTarget is the 400 of a target the cluster lacks, matching ErrUnknownTarget.
type unknownTarget struct{ error }

func (u unknownTarget) Unwrap() error { return u.error }

func (u unknownTarget) Is(target error) bool { return target == ErrUnknownTarget }

// TargetedMembers resolves a placement's targets against the LXD cluster: the members they
// name, sorted. A target the cluster does not have is a 400 listing what it has.
func TargetedMembers(p *api.DeploymentShapePlacement, members []Member) ([]string, error) {
	byName := map[string]Member{}
	groups := map[string][]string{}
	for _, m := range members {
		byName[m.Name] = m
		for _, g := range m.Groups {
			groups[g] = append(groups[g], m.Name)
		}
	}

	if p == nil || len(p.Targets) == 0 {
		names := make([]string, 0, len(members))
		for _, m := range members {
			names = append(names, m.Name)
		}

		sort.Strings(names)
		return names, nil
	}

	set := map[string]bool{}
	for _, target := range p.Targets {
		group, isGroup := strings.CutPrefix(target, api.PlacementGroupPrefix)
		switch {
		case isGroup && groups[group] == nil:
			return nil, unknownTarget{lxdapi.StatusErrorf(http.StatusBadRequest, "placement.targets names cluster group %q, which the LXD cluster does not have (or which has no members): groups are %s", group, listOr(sortedKeys(groups)))}
		case isGroup:
			for _, name := range groups[group] {
				set[name] = true
			}

		case byName[target].Name == "":
			return nil, unknownTarget{lxdapi.StatusErrorf(http.StatusBadRequest, "placement.targets names member %q, which the LXD cluster does not have: members are %s", target, listOr(sortedKeys(byName)))}
		default:
			set[target] = true
		}
	}

	return sortedKeys(set), nil
}

// Domains returns the failure domains of a placement over the LXD cluster, sorted by name,
// with the shape's instances counted in them. counts is the counted instances per member
// (db.GetShapeLocationCounts); instances on a member outside the targets are in no domain.
// Under spread group a member in two targeted groups belongs to the first one the targets
// list (or, without targets, to its first group by name), so no instance counts twice.
func Domains(p *api.DeploymentShapePlacement, members []Member, counts map[string]int) ([]Domain, error) {
	targeted, err := TargetedMembers(p, members)
	if err != nil {
		return nil, err
	}

	online := map[string]bool{}
	groupsOf := map[string][]string{}
	for _, m := range members {
		online[m.Name] = m.takes()
		groupsOf[m.Name] = slices.Sorted(slices.Values(m.Groups))
	}

	domainOf := map[string]string{} // member -> domain
	switch spread(p) {
	case api.PlacementSpreadMember:
		for _, name := range targeted {
			domainOf[name] = name
		}

	case api.PlacementSpreadNone:
		for _, name := range targeted {
			domainOf[name] = ""
		}

	case api.PlacementSpreadGroup:
		var order []string // the groups in the order that decides a member's one domain
		if p != nil {
			for _, target := range p.Targets {
				order = append(order, strings.TrimPrefix(target, api.PlacementGroupPrefix))
			}
		}

		for _, name := range targeted {
			candidates := order
			if len(candidates) == 0 {
				candidates = groupsOf[name]
			}

			for _, g := range candidates {
				if slices.Contains(groupsOf[name], g) {
					domainOf[name] = g
					break
				}
			}
		}
	}

	byName := map[string]*Domain{}
	for _, name := range targeted {
		dn, ok := domainOf[name]
		if !ok {
			continue
		}

		d := byName[dn]
		if d == nil {
			d = &Domain{Name: dn}
			byName[dn] = d
		}

		d.Members = append(d.Members, name)
		d.Count += counts[name]
		d.Available = d.Available || online[name]
	}

	domains := make([]Domain, 0, len(byName))
	for _, d := range byName {
		domains = append(domains, *d)
	}

	sort.Slice(domains, func(i, j int) bool { return domains[i].Name < domains[j].Name })
	return domains, nil
}

// Skew is the largest minus the smallest instance count over the available domains: above
// one, the spread is broken. Domains with no online member are left out: nothing can be
// placed there to even them out.
func Skew(domains []Domain) int {
	lo, hi, any := 0, 0, false
	for _, d := range domains {
		if !d.Available {
			continue
		}

		if !any {
			lo, hi, any = d.Count, d.Count, true
			continue
		}

		lo, hi = min(lo, d.Count), max(hi, d.Count)
	}

	return hi - lo
}

// Choice is where one new instance goes.
type Choice struct {
	// Target is what LXD's create gets as ?target=: a member name, or empty for LXD's own
	// choice (a cluster that is not one, or spread none over the whole cluster), or
	// "@group" (spread none over a single targeted group).
	Target string

	// Member is the member the instance is reserved on, empty when LXD chooses.
	Member string

	// Domain is the failure domain it counts in.
	Domain string

	// Skew is the spread's skew once it is there.
	Skew int
}

// ChooseLaunch picks where a new instance of a shape goes: the least-filled available
// domain (ties to the first by name), and in it the least-filled online member. It runs
// inside the launch's reservation transaction, over counts that include every reservation
// before it, so concurrent launches do not pile onto one member.
//
// Rigor strict refuses (409) a launch that would leave some targeted domain more than one
// instance behind the chosen one: that happens only when the emptier domain cannot take
// instances (its members are offline or evacuated). Permissive places it anyway; the skew
// in the choice says by how much the spread is off.
func ChooseLaunch(shape string, p *api.DeploymentShapePlacement, members []Member, counts map[string]int) (Choice, error) {
	return chooseAvoiding(shape, p, members, counts, "")
}

// chooseAvoiding is ChooseLaunch that passes over the domain avoid while another one is
// available (an unhealthy instance's replacement, an instance being drained).
func chooseAvoiding(shape string, p *api.DeploymentShapePlacement, members []Member, counts map[string]int, avoid string) (Choice, error) {
	if len(members) == 0 {
		// LXD is not clustered: nothing to choose.
		return Choice{}, nil
	}

	domains, err := Domains(p, members, counts)
	if err != nil {
		return Choice{}, err
	}

	online := map[string]bool{}
	for _, m := range members {
		online[m.Name] = m.takes()
	}

	// The least-filled available domain, the avoided one only when no other is available;
	// domains are sorted by name, so ties go to the first.
	best := -1
	for i, d := range domains {
		if !d.Available {
			continue
		}

		if best < 0 || less(d, domains[best], avoid) {
			best = i
		}
	}

	if best < 0 {
		targeted := []string{}
		for _, d := range domains {
			targeted = append(targeted, d.Members...)
		}

		return Choice{}, lxdapi.StatusErrorf(http.StatusServiceUnavailable, "shape %s has no online LXD member to place an instance on (targets: %s): bring a member back or change placement.targets", shape, listOr(targeted))
	}

	chosen := domains[best]
	lowest := chosen.Count
	var behind *Domain
	for i, d := range domains {
		if d.Count < lowest {
			lowest = d.Count
			behind = &domains[i]
		}
	}

	if strict(p) && spread(p) != api.PlacementSpreadNone && chosen.Count+1-lowest > 1 {
		return Choice{}, lxdapi.StatusErrorf(http.StatusConflict, "shape %s keeps placement.spread %s strictly: the next instance would go to %s (%d there) while %s has %d and cannot take one (its members are offline or evacuated): bring %s back, or set placement.rigor to permissive", shape, spread(p), chosen.Name, chosen.Count+1, behind.Name, behind.Count, behind.Name)
	}

	choice := Choice{Domain: chosen.Name}
	if spread(p) == api.PlacementSpreadNone {
		choice.Target = noneTarget(p)
	} else {
		member := ""
		for _, name := range chosen.Members {
			if online[name] && (member == "" || counts[name] < counts[member]) {
				member = name
			}
		}

		choice.Target, choice.Member = member, member
	}

	domains[best].Count++
	choice.Skew = Skew(domains)
	return choice, nil
}

// less orders two available domains for a launch: any domain before the avoided one, then
// the emptier first.
func less(a Domain, b Domain, avoid string) bool {
	if (a.Name == avoid) != (b.Name == avoid) {
		return b.Name == avoid
	}

	return a.Count < b.Count
}

// noneTarget is what LXD gets for spread none: nothing when every member is a target, the
// group when the targets are one group, else the first target (LXD has no target that is
// a list; doc/placement.md says to name one group).
func noneTarget(p *api.DeploymentShapePlacement) string {
	if p == nil || len(p.Targets) == 0 {
		return ""
	}

	return p.Targets[0]
}

// Unreachable says whether an instance recorded on member location cannot be reached: LXD
// reports its member offline. An instance whose member is unknown (not recorded yet, or LXD
// not clustered) is not unreachable.
func Unreachable(location string, members []Member) bool {
	if location == "" {
		return false
	}

	for _, m := range members {
		if m.Name == location {
			return !m.Online
		}
	}

	// A member LXD no longer lists (removed from the cluster) holds nothing we can reach.
	return len(members) > 0
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	return keys
}

// listOr lists names for an error message, "none" when there are none.
func listOr(names []string) string {
	if len(names) == 0 {
		return "none"
	}

	return strings.Join(names, ", ")
}

// PlacementStatus sums up how a shape's instances sit over its domains, for the API.
func PlacementStatus(domains []Domain, unreachable int) *api.DeploymentShapePlacementStatus {
	status := &api.DeploymentShapePlacementStatus{Domains: map[string]int{}, Skew: Skew(domains), Unreachable: unreachable}
	for _, d := range domains {
		name := d.Name
		if name == "" {
			name = "all"
		}

		status.Domains[name] = d.Count
	}

	return status
}
