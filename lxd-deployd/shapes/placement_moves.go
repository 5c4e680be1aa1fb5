package shapes

import (
	"maps"
	"sort"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The placement rules for instances that go or move: which instance a scale-in removes,
// where a replacement goes, and the plans of drain-member and rebalance (doc/placement.md).

// Placed is an instance as placement sees it: its name and the member LXD runs it on.
type Placed struct {
	Name     string
	Location string
}

// domainOfMember maps each targeted member to its domain.
func domainOfMember(domains []Domain) map[string]*Domain {
	byMember := map[string]*Domain{}
	for i := range domains {
		for _, m := range domains[i].Members {
			byMember[m] = &domains[i]
		}
	}

	return byMember
}

// VictimOrder reorders the instances a scale-in may remove, given in the caller's order of
// preference (unhealthy, outdated, ... first), so that those in the most-filled domain come
// first, the preference deciding within a domain; instances on a member outside the
// targets come before all (they are misplaced), and unreachable instances after all (LXD
// cannot delete them while their member is offline). Spread holds on the way down, which
// Kubernetes and Nomad do not do (their spread decays on scale-in).
func VictimOrder(p *api.DeploymentShapePlacement, members []Member, counts map[string]int, candidates []Placed) ([]Placed, error) {
	out := append([]Placed(nil), candidates...)
	if len(members) == 0 {
		return out, nil
	}

	domains, err := Domains(p, members, counts)
	if err != nil {
		return nil, err
	}

	byMember := domainOfMember(domains)
	rank := func(c Placed) (int, int) {
		if Unreachable(c.Location, members) {
			return 2, 0
		}

		d := byMember[c.Location]
		if d == nil {
			return 0, 0
		}

		return 1, -d.Count
	}

	sort.SliceStable(out, func(i, j int) bool {
		ci, ni := rank(out[i])
		cj, nj := rank(out[j])
		if ci != cj {
			return ci < cj
		}

		return ni < nj
	})
	return out, nil
}

// SkewAfterRemoving is the skew a shape is left with when the instance on member location
// goes: what a governor that names its own victim is told.
func SkewAfterRemoving(p *api.DeploymentShapePlacement, members []Member, counts map[string]int, location string) (int, error) {
	after := maps.Clone(counts)
	if after[location] > 0 {
		after[location]--
	}

	domains, err := Domains(p, members, after)
	if err != nil {
		return 0, err
	}

	return Skew(domains), nil
}

// ChooseReplacement picks where the replacement of an instance goes (autohealing, a
// rollout). A healthy instance is replaced in its own domain when that domain can take
// one, so the spread holds through the swap; an unhealthy one elsewhere when another
// domain can, because the member may be why it is unhealthy. counts must no longer count
// the replaced instance.
func ChooseReplacement(shape string, p *api.DeploymentShapePlacement, members []Member, counts map[string]int, replaced Placed, healthy bool) (Choice, error) {
	if len(members) == 0 {
		return Choice{}, nil
	}

	domains, err := Domains(p, members, counts)
	if err != nil {
		return Choice{}, err
	}

	own := domainOfMember(domains)[replaced.Location]
	if own == nil || spread(p) == api.PlacementSpreadNone {
		return ChooseLaunch(shape, p, members, counts)
	}

	if !healthy {
		return chooseAvoiding(shape, p, members, counts, own.Name)
	}

	online := map[string]bool{}
	for _, m := range members {
		online[m.Name] = m.takes()
	}

	member := ""
	for _, name := range own.Members {
		if online[name] && (member == "" || counts[name] < counts[member]) {
			member = name
		}
	}

	if member == "" {
		return ChooseLaunch(shape, p, members, counts)
	}

	own.Count++
	return Choice{Target: member, Member: member, Domain: own.Name, Skew: Skew(domains)}, nil
}

// Move is one step of a drain or a rebalance: an instance leaves its member for To.
type Move struct {
	Instance string
	From     string
	To       Choice

	// LaunchFirst is true when the shape's maximum leaves room for the new instance before
	// the old one goes (never below the minimum, nothing unavailable); false when it does
	// not, and the old one is deleted first, within health.max_unavailable.
	LaunchFirst bool
}

// PlanDrain plans moving every instance of a shape off member, one at a time, in name
// order: each goes where a launch would, with member taking nothing (spread as the other
// domains allow; a strict placement is relaxed, since the operator is taking the member
// away). room is how many instances the maximum leaves for (maximum - current - going).
func PlanDrain(shape string, p *api.DeploymentShapePlacement, members []Member, counts map[string]int, instances []Placed, member string, room int) ([]Move, error) {
	relaxed := relax(p)
	draining := make([]Member, len(members))
	for i, m := range members {
		draining[i] = m
		if m.Name == member {
			draining[i].Closed = true
		}
	}

	counts = maps.Clone(counts)
	var on []Placed
	for _, inst := range instances {
		if inst.Location == member {
			on = append(on, inst)
		}
	}

	sort.Slice(on, func(i, j int) bool { return on[i].Name < on[j].Name })
	moves := []Move{}
	for _, inst := range on {
		counts[member]--
		choice, err := ChooseLaunch(shape, relaxed, draining, counts)
		if err != nil {
			return nil, err
		}

		counts[choice.Member]++
		moves = append(moves, Move{Instance: inst.Name, From: member, To: choice, LaunchFirst: room > 0})
	}

	return moves, nil
}

// PlanRebalance plans the moves that bring a shape's skew to at most one: each takes an
// instance from the fullest member of the fullest available domain to where a launch would
// go, until the spread holds. instances come in the caller's order of preference (the
// first on a member moves first). Unreachable instances are autohealing's, not moved here.
func PlanRebalance(shape string, p *api.DeploymentShapePlacement, members []Member, counts map[string]int, instances []Placed, room int) ([]Move, error) {
	if len(members) == 0 || spread(p) == api.PlacementSpreadNone {
		return []Move{}, nil
	}

	relaxed := relax(p)
	counts = maps.Clone(counts)
	moved := map[string]bool{}
	moves := []Move{}
	for range instances {
		domains, err := Domains(relaxed, members, counts)
		if err != nil {
			return nil, err
		}

		if Skew(domains) <= 1 {
			break
		}

		full := -1
		for i, d := range domains {
			if d.Available && (full < 0 || d.Count > domains[full].Count) {
				full = i
			}
		}

		from := ""
		for _, m := range domains[full].Members {
			if from == "" || counts[m] > counts[from] {
				from = m
			}
		}

		var victim *Placed
		for i, inst := range instances {
			if inst.Location == from && !moved[inst.Name] {
				victim = &instances[i]
				break
			}
		}

		if victim == nil {
			break
		}

		counts[from]--
		choice, err := chooseAvoiding(shape, relaxed, members, counts, domains[full].Name)
		if err != nil {
			return nil, err
		}

		counts[choice.Member]++
		moved[victim.Name] = true
		moves = append(moves, Move{Instance: victim.Name, From: from, To: choice, LaunchFirst: room > 0})
	}

	return moves, nil
}

// relax returns a placement that places as evenly as it can without refusing.
func relax(p *api.DeploymentShapePlacement) *api.DeploymentShapePlacement {
	if p == nil {
		return nil
	}

	relaxed := *p
	relaxed.Rigor = api.PlacementRigorPermissive
	return &relaxed
}
