package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// serversState reads every server of the HAProxy behind admin.
func serversState(ctx context.Context, admin string) ([]serverState, error) {
	out, err := command(ctx, admin, "show servers state")
	if err != nil {
		return nil, err
	}
	return parseServersState(out)
}

// reconcile makes the door's servers in every backend of want (backend name -> servers)
// match it, and removes the door's servers from backends not in want. Only servers named
// with serverPrefix are touched.
func reconcile(ctx context.Context, log *slog.Logger, admin string, want map[string][]frontdoor.Server, only map[string]bool) error {
	current, err := serversState(ctx, admin)
	if err != nil {
		return err
	}
	backends := map[string]bool{}
	for be := range want {
		backends[be] = true
	}
	for _, s := range current {
		if _, ok := instanceOf(s.Name); ok {
			backends[s.Backend] = true
		}
	}
	names := make([]string, 0, len(backends))
	for be := range backends {
		if only == nil || only[be] {
			names = append(names, be)
		}
	}
	sort.Strings(names)
	out, err := command(ctx, admin, "show backend")
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			exists[line] = true
		}
	}
	var errs []error
	for _, be := range names {
		if !exists[be] {
			errs = append(errs, fmt.Errorf("haproxy has no backend %s: add it to haproxy's configuration (mode and balance roundrobin as the shape needs) or name another", be))
			continue
		}
		for _, st := range planServers(be, current, want[be]) {
			out, err := command(ctx, admin, st.Cmd)
			if err == nil {
				err = checkAnswer(st.Cmd, out)
			}
			if err == nil {
				continue
			}
			if st.Optional {
				log.Debug("front door: will retry at the next apply", "command", st.Cmd, "err", err)
				continue
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				return errors.Join(errs...)
			}
		}
	}
	return errors.Join(errs...)
}

// stats reads `show stat` and files each backend the door knows (keyOf) by its key.
func stats(ctx context.Context, admin string, keyOf func(backend string) (string, bool)) (map[string]frontdoor.FrontendStats, error) {
	out, err := command(ctx, admin, "show stat")
	if err != nil {
		return nil, err
	}
	rows, err := parseStat(out)
	if err != nil {
		return nil, err
	}
	return statsFromRows(rows, keyOf), nil
}

// statsFromRows is stats' pure part.
func statsFromRows(rows []statRow, keyOf func(backend string) (string, bool)) map[string]frontdoor.FrontendStats {
	res := map[string]frontdoor.FrontendStats{}
	get := func(key string) frontdoor.FrontendStats {
		fs, ok := res[key]
		if !ok {
			fs.Servers = map[string]frontdoor.ServerStats{}
		}
		return fs
	}
	for _, r := range rows {
		key, ok := keyOf(r["pxname"])
		if !ok {
			continue
		}
		sv := r["svname"]
		switch sv {
		case "FRONTEND":
			continue
		case "BACKEND":
			fs := get(key)
			fs.Sessions = r.int("scur")
			fs.RequestRate = float64(r.int("rate"))
			fs.Queue = r.int("qcur")
			fs.ResponseTime = time.Duration(r.int("rtime")) * time.Millisecond
			res[key] = fs
		default:
			inst, ok := instanceOf(sv)
			if !ok {
				continue
			}
			fs := get(key)
			fs.Servers[inst] = frontdoor.ServerStats{
				Sessions:     r.int("scur"),
				RequestRate:  float64(r.int("rate")),
				Queue:        r.int("qcur"),
				ResponseTime: time.Duration(r.int("rtime")) * time.Millisecond,
				Up:           r.up(),
				Out:          r.out(),
			}
			res[key] = fs
		}
	}
	return res
}
