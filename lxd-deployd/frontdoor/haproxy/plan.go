package haproxy

import (
	"fmt"
	"sort"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// step is one runtime command; optional steps may fail without failing Apply (removing a
// server whose connections are still closing is retried at the next Apply).
type step struct {
	Cmd      string
	Optional bool
}

// planServers is what the runtime API must do to backend be so that the door's servers in
// it (current, those named serverPrefix+instance) become want. It is pure: Apply reads
// the current state once, plans, then sends the steps in order.
func planServers(be string, current []serverState, want []frontdoor.Server) []step {
	have := map[string]serverState{}
	for _, s := range current {
		if s.Backend != be {
			continue
		}
		if _, ok := instanceOf(s.Name); ok {
			have[s.Name] = s
		}
	}
	var steps []step
	add := func(cmd string, args ...any) { steps = append(steps, step{Cmd: fmt.Sprintf(cmd, args...)}) }
	wanted := map[string]bool{}
	for _, w := range sortedServers(want) {
		name := serverName(w.Name)
		wanted[name] = true
		id := be + "/" + name
		cur, ok := have[name]
		if !ok {
			// A dynamic server starts in maintenance with its check off.
			add("add server %s %s %s weight %d", id, serverAddr(w), serverCheck, serverWeight)
			add("enable health %s", id)
			cur = serverState{Backend: be, Name: name, Addr: w.Address, Port: w.Port, Admin: 0x01, Weight: serverWeight}
		}
		if cur.Addr != w.Address || cur.Port != w.Port {
			add("set server %s addr %s port %d", id, w.Address, w.Port)
		}
		maint, drain := cur.Admin&adminMaint != 0, cur.Admin&adminDrain != 0
		switch w.State {
		case frontdoor.StateServing:
			if maint || drain {
				add("set server %s state ready", id)
			}
			if cur.Weight != serverWeight {
				add("set weight %s %d", id, serverWeight)
			}
		case frontdoor.StateDraining:
			if maint || !drain {
				add("set server %s state drain", id)
			}
		default:
			if !maint {
				add("set server %s state maint", id)
			}
		}
	}
	var gone []string
	for name := range have {
		if !wanted[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		id := be + "/" + name
		if have[name].Admin&adminMaint == 0 {
			add("set server %s state maint", id)
		}
		// The daemon drained it first; what is still open is past the drain timeout.
		add("shutdown sessions server %s", id)
		steps = append(steps, step{Cmd: "del server " + id, Optional: true})
	}
	return steps
}
