package shapes

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// three is the test cluster: m1, m2, m3 online, m3 alone in group gpu, m1 and m2 in rack1.
func three() []Member {
	return []Member{
		{Name: "m1", Online: true, Groups: []string{"default", "rack1"}},
		{Name: "m2", Online: true, Groups: []string{"default", "rack1"}},
		{Name: "m3", Online: true, Groups: []string{"default", "gpu"}},
	}
}

func offline(members []Member, name string) []Member {
	out := append([]Member(nil), members...)
	for i := range out {
		if out[i].Name == name {
			out[i].Online = false
		}
	}

	return out
}

// launchN places n instances one after the other, as n launches' reservations do.
func launchN(t *testing.T, p *api.DeploymentShapePlacement, members []Member, counts map[string]int, n int) map[string]int {
	t.Helper()
	for range n {
		c, err := ChooseLaunch("web", p, members, counts)
		if err != nil {
			t.Fatal(err)
		}

		counts[c.Member]++
	}

	return counts
}

func TestChooseLaunch(t *testing.T) {
	member := &api.DeploymentShapePlacement{Spread: "member"}
	tests := []struct {
		name      string
		placement *api.DeploymentShapePlacement
		members   []Member
		counts    map[string]int
		n         int
		want      map[string]int
	}{
		{"6 land 2/2/2", member, three(), map[string]int{}, 6, map[string]int{"m1": 2, "m2": 2, "m3": 2}},
		{"default placement spreads by member", nil, three(), map[string]int{}, 3, map[string]int{"m1": 1, "m2": 1, "m3": 1}},
		{"fills the emptiest first", member, three(), map[string]int{"m1": 3, "m2": 1}, 3, map[string]int{"m1": 3, "m2": 2, "m3": 2}},
		{"@group only", &api.DeploymentShapePlacement{Targets: []string{"@gpu"}}, three(), map[string]int{}, 3, map[string]int{"m3": 3}},
		{"member and group targets", &api.DeploymentShapePlacement{Targets: []string{"m1", "@gpu"}}, three(), map[string]int{}, 4, map[string]int{"m1": 2, "m3": 2}},
		{"permissive skips an offline member", member, offline(three(), "m3"), map[string]int{"m3": 2}, 4, map[string]int{"m1": 2, "m2": 2, "m3": 2}},
		{"group spread", &api.DeploymentShapePlacement{Targets: []string{"@rack1", "@gpu"}, Spread: "group"}, three(), map[string]int{}, 4, map[string]int{"m1": 1, "m2": 1, "m3": 2}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := launchN(t, tt.placement, tt.members, tt.counts, tt.n)
			for k, v := range got {
				if v == 0 {
					delete(got, k)
				}
			}

			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("placed %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChooseLaunchRefusals(t *testing.T) {
	strictMember := &api.DeploymentShapePlacement{Spread: "member", Rigor: "strict"}
	tests := []struct {
		name      string
		placement *api.DeploymentShapePlacement
		members   []Member
		counts    map[string]int
		status    int
		text      string
	}{
		{"strict with an empty offline member", strictMember, offline(three(), "m3"), map[string]int{"m1": 1, "m2": 1}, http.StatusConflict,
			"shape web keeps placement.spread member strictly: the next instance would go to m1 (2 there) while m3 has 0 and cannot take one (its members are offline or evacuated): bring m3 back, or set placement.rigor to permissive"},
		{"no online member", nil, offline(offline(offline(three(), "m1"), "m2"), "m3"), map[string]int{}, http.StatusServiceUnavailable,
			"shape web has no online LXD member to place an instance on (targets: m1, m2, m3): bring a member back or change placement.targets"},
		{"unknown member", &api.DeploymentShapePlacement{Targets: []string{"m9"}}, three(), map[string]int{}, http.StatusBadRequest,
			`placement.targets names member "m9", which the LXD cluster does not have: members are m1, m2, m3`},
		{"unknown group", &api.DeploymentShapePlacement{Targets: []string{"@tpu"}}, three(), map[string]int{}, http.StatusBadRequest,
			`placement.targets names cluster group "tpu", which the LXD cluster does not have (or which has no members): groups are default, gpu, rack1`},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ChooseLaunch("web", tt.placement, tt.members, tt.counts)
			if err == nil || err.Error() != tt.text {
				t.Fatalf("got %v, want %q", err, tt.text)
			}

			if !lxdapi.StatusErrorCheck(err, tt.status) {
				t.Fatalf("got status of %v, want %d", err, tt.status)
			}
		})
	}

	// Strict is fine while the offline member is not behind.
	c, err := ChooseLaunch("web", strictMember, offline(three(), "m3"), map[string]int{"m1": 1, "m3": 1})
	if err != nil || c.Member != "m2" || c.Skew != 0 {
		t.Fatalf("strict with a level offline member: %+v, %v; want m2, skew 0", c, err)
	}
}

func TestChooseLaunchTargets(t *testing.T) {
	tests := []struct {
		name      string
		placement *api.DeploymentShapePlacement
		members   []Member
		want      Choice
	}{
		{"not clustered", &api.DeploymentShapePlacement{Spread: "member"}, nil, Choice{}},
		{"member", nil, three(), Choice{Target: "m1", Member: "m1", Domain: "m1", Skew: 1}},
		{"none over the cluster", &api.DeploymentShapePlacement{Spread: "none"}, three(), Choice{}},
		{"none over a group", &api.DeploymentShapePlacement{Spread: "none", Targets: []string{"@gpu"}}, three(), Choice{Target: "@gpu", Skew: 0}},
		{"group picks the emptiest member", &api.DeploymentShapePlacement{Spread: "group", Targets: []string{"@rack1"}}, three(), Choice{Target: "m1", Member: "m1", Domain: "rack1"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseLaunch("web", tt.placement, tt.members, map[string]int{})
			if err != nil {
				t.Fatal(err)
			}

			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A scale-in that takes victims in VictimOrder keeps the spread: 2/2/2 to 3 leaves 1/1/1,
// whatever order the caller prefers.
func TestVictimOrderKeepsSpread(t *testing.T) {
	instances := []Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m2"}, {"d", "m2"}, {"e", "m3"}, {"f", "m3"}}
	counts := map[string]int{"m1": 2, "m2": 2, "m3": 2}
	for range 3 {
		order, err := VictimOrder(nil, three(), counts, instances)
		if err != nil {
			t.Fatal(err)
		}

		victim := order[0]
		counts[victim.Location]--
		for i, inst := range instances {
			if inst == victim {
				instances = append(instances[:i], instances[i+1:]...)
				break
			}
		}
	}

	if !reflect.DeepEqual(counts, map[string]int{"m1": 1, "m2": 1, "m3": 1}) {
		t.Fatalf("after scaling 6 to 3: %v, want 1/1/1", counts)
	}

	// Preference decides within the fullest domain; misplaced first, unreachable last.
	members := offline(three(), "m2")
	order, err := VictimOrder(&api.DeploymentShapePlacement{Targets: []string{"m1", "m2"}}, members, map[string]int{"m1": 2, "m2": 3, "m3": 1},
		[]Placed{{"x", "m2"}, {"y", "m1"}, {"z", "m3"}, {"w", "m1"}})
	if err != nil {
		t.Fatal(err)
	}

	if got := fmt.Sprint(order); got != "[{z m3} {y m1} {w m1} {x m2}]" {
		t.Fatalf("order %s", got)
	}

	skew, err := SkewAfterRemoving(nil, three(), map[string]int{"m1": 1, "m2": 1, "m3": 1}, "m1")
	if err != nil || skew != 1 {
		t.Fatalf("skew after removing from a level 1/1/1: %d, %v; want 1", skew, err)
	}
}

func TestChooseReplacement(t *testing.T) {
	counts := map[string]int{"m1": 2, "m2": 2, "m3": 1} // the replaced one on m3 no longer counts
	replaced := Placed{"f", "m3"}
	c, err := ChooseReplacement("web", nil, three(), counts, replaced, true)
	if err != nil || c.Member != "m3" || c.Skew != 0 {
		t.Fatalf("healthy: %+v, %v; want m3 with skew 0", c, err)
	}

	c, err = ChooseReplacement("web", nil, three(), counts, replaced, false)
	if err != nil || c.Member != "m1" || c.Skew != 2 {
		t.Fatalf("unhealthy: %+v, %v; want m1 (elsewhere) with skew 2", c, err)
	}

	// Its member gone: the emptiest other member, whatever its health.
	c, err = ChooseReplacement("web", nil, offline(three(), "m3"), map[string]int{"m1": 2, "m2": 1, "m3": 1}, replaced, true)
	if err != nil || c.Member != "m2" {
		t.Fatalf("member offline: %+v, %v; want m2", c, err)
	}
}

func TestPlanDrain(t *testing.T) {
	instances := []Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m2"}, {"d", "m2"}, {"f", "m3"}, {"e", "m3"}}
	counts := map[string]int{"m1": 2, "m2": 2, "m3": 2}
	strictMember := &api.DeploymentShapePlacement{Rigor: "strict"}
	for _, room := range []int{0, 1} {
		moves, err := PlanDrain("web", strictMember, three(), counts, instances, "m3", room)
		if err != nil {
			t.Fatal(err)
		}

		var got []string
		for _, m := range moves {
			got = append(got, fmt.Sprintf("%s:%s->%s:%v", m.Instance, m.From, m.To.Member, m.LaunchFirst))
		}

		first := room > 0
		want := []string{fmt.Sprintf("e:m3->m1:%v", first), fmt.Sprintf("f:m3->m2:%v", first)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("room %d: %v, want %v", room, got, want)
		}
	}

	if counts["m3"] != 2 {
		t.Fatalf("PlanDrain changed the caller's counts: %v", counts)
	}
}

func TestPlanRebalance(t *testing.T) {
	tests := []struct {
		name      string
		placement *api.DeploymentShapePlacement
		counts    map[string]int
		instances []Placed
		want      []string
	}{
		{"4/1/1 to 2/2/2", nil, map[string]int{"m1": 4, "m2": 1, "m3": 1},
			[]Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m1"}, {"d", "m1"}, {"e", "m2"}, {"f", "m3"}},
			[]string{"a:m1->m2", "b:m1->m3"}},
		{"a returning empty member", nil, map[string]int{"m1": 2, "m2": 2, "m3": 0},
			[]Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m2"}, {"d", "m2"}},
			[]string{"a:m1->m3"}},
		{"already even", nil, map[string]int{"m1": 2, "m2": 1, "m3": 1},
			[]Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m2"}, {"d", "m3"}}, nil},
		{"spread none never moves", &api.DeploymentShapePlacement{Spread: "none"}, map[string]int{"m1": 4},
			[]Placed{{"a", "m1"}, {"b", "m1"}, {"c", "m1"}, {"d", "m1"}}, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moves, err := PlanRebalance("web", tt.placement, three(), tt.counts, tt.instances, 0)
			if err != nil {
				t.Fatal(err)
			}

			var got []string
			for _, m := range moves {
				got = append(got, fmt.Sprintf("%s:%s->%s", m.Instance, m.From, m.To.Member))
			}

			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("moves %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPlacementDomainsAndStatus(t *testing.T) {
	// A member in two targeted groups counts once, in the first group the targets list.
	members := []Member{
		{Name: "m1", Online: true, Groups: []string{"a", "b"}},
		{Name: "m2", Online: true, Groups: []string{"b"}},
		{Name: "m3", Online: false, Groups: []string{"c"}},
	}
	p := &api.DeploymentShapePlacement{Spread: "group", Targets: []string{"@b", "@a", "@c"}}
	domains, err := Domains(p, members, map[string]int{"m1": 1, "m2": 2, "m3": 5})
	if err != nil {
		t.Fatal(err)
	}

	got := fmt.Sprint(domains)
	want := "[{b [m1 m2] 3 true} {c [m3] 5 false}]"
	if got != want {
		t.Fatalf("domains %s, want %s", got, want)
	}

	status := PlacementStatus(domains, 5)
	if status.Skew != 0 || status.Domains["b"] != 3 || status.Domains["c"] != 5 || status.Unreachable != 5 {
		t.Fatalf("status %+v", status)
	}

	if !Unreachable("m3", members) || Unreachable("m1", members) || Unreachable("", members) || !Unreachable("gone", members) || Unreachable("m1", nil) {
		t.Fatal("Unreachable disagrees with the member list")
	}

	if !strings.Contains(fmt.Sprint(PlacementStatus(nil, 0)), "map[]") {
		t.Fatal("an empty status has no domains map")
	}
}

// A rolling step removes the outdated instance on the fullest member: the surge instance
// went to m1 (the emptiest by name), so an outdated one on m1 goes, not one on m2 or m3.
func TestRolloutKeepsSpread(t *testing.T) {
	inst := func(name string, revision int, location string) RolloutInstance {
		return RolloutInstance{Name: name, Revision: revision, Ready: true, Location: location}
	}

	state := RolloutState{
		Settings: Rollout{Strategy: api.RolloutRolling, Surge: 1},
		Size:     6, Minimum: 0, Maximum: 7, Target: 2,
		Instances: []RolloutInstance{
			inst("f", 1, "m3"), inst("e", 1, "m3"), inst("d", 1, "m2"), inst("c", 1, "m2"),
			inst("b", 1, "m1"), inst("a", 1, "m1"), inst("new", 2, "m1"),
		},
	}

	plan := PlanRollout(state)
	if len(plan.Remove) != 1 || (plan.Remove[0] != "a" && plan.Remove[0] != "b") {
		t.Fatalf("plan removes %v, want one of m1's outdated instances (a or b)", plan.Remove)
	}
}
