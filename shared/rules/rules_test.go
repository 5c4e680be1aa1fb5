package rules

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestStates: what each state counts for. The SQL of the same rules is held to these
// predicates in a real database by db's TestRulesSQLAgreeWithGo.
func TestStates(t *testing.T) {
	for _, c := range []struct {
		state                string
		counted, going, held bool
	}{
		{Creating, true, false, true},
		{Created, true, false, true},
		{Deleting, false, true, true},
		{Replacing, false, true, true},
		{Missing, false, false, false},
		{"legacy", true, false, true}, // a state unknown to this build counts
	} {
		if Counted(c.state) != c.counted || Going(c.state) != c.going || Held(c.state) != c.held {
			t.Errorf("%s: counted %v going %v held %v, want %v %v %v", c.state, Counted(c.state), Going(c.state), Held(c.state), c.counted, c.going, c.held)
		}
	}
}

func TestReady(t *testing.T) {
	for _, c := range []struct {
		state, hook, health string
		checked, ready      bool
	}{
		{Created, "", api.HealthUnknown, false, true},
		{Created, "", api.HealthUnknown, true, false},
		{Created, "", api.HealthHealthy, true, true},
		{Created, api.LifecycleLaunchingWait, api.HealthHealthy, true, false},
		{Created, api.LifecycleTerminatingWait, api.HealthHealthy, true, true},
		{Creating, "", api.HealthHealthy, false, false},
	} {
		if Ready(c.state, c.hook, c.health, c.checked) != c.ready {
			t.Errorf("%+v: want ready %v", c, c.ready)
		}
	}

	if ReadyCount(true, 3, 1) != 1 || ReadyCount(false, 3, 1) != 3 {
		t.Error("ReadyCount: the healthy settled ones with checks, the settled ones without")
	}
}

func TestClampAndRoom(t *testing.T) {
	for _, c := range []struct{ target, min, max, want int }{{0, 1, 3, 1}, {2, 1, 3, 2}, {5, 1, 3, 3}, {3, 3, 3, 3}} {
		if got := Clamp(c.target, c.min, c.max); got != c.want {
			t.Errorf("Clamp(%d, %d, %d) = %d, want %d", c.target, c.min, c.max, got, c.want)
		}
	}

	for _, c := range []struct{ max, current, going, want int }{{3, 1, 1, 1}, {3, 2, 1, 0}, {3, 3, 2, 0}, {3, 0, 0, 3}} {
		if got := Room(c.max, c.current, c.going); got != c.want {
			t.Errorf("Room(%d, %d, %d) = %d, want %d", c.max, c.current, c.going, got, c.want)
		}
	}
}

// TestSQLText: the fragments as the queries read them (their answers are tested in db).
func TestSQLText(t *testing.T) {
	i := SQL("i")
	for got, want := range map[string]string{
		i.Counted():         "i.state NOT IN ('deleting', 'missing', 'replacing')",
		i.Going():           "i.state IN ('deleting', 'replacing')",
		i.Settled():         "(i.state = 'created' AND i.hook != 'launching:wait')",
		i.Outdated("si"):    "i.revision < si.revision",
		SQL("").In(Created): "state = 'created'",
		quote("it's"):       "'it''s'",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
