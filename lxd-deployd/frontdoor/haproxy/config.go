package haproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// Check and retry settings, the same for servers in the configuration and servers added
// at run time (dynamic servers take nothing from default-server). Checks every 500 ms
// and two failures take a dead instance out in about a second, before autohealing acts;
// two consecutive connection errors seen on real traffic (observe layer4) take it out at
// once. Requests meanwhile are retried on another server (retries, redispatch).
const (
	serverCheck   = "check inter 500ms fastinter 200ms downinter 500ms rise 2 fall 2 observe layer4 error-limit 2 on-error mark-down"
	serverWeight  = 100
	backendRetry  = 3
	hardStopAfter = "5m"
)

// holdServer is the backup server of a frontend with a hold (Frontend.Hold).
const holdServer = "hold"

// paths are where a private door keeps its HAProxy's files.
type paths struct {
	Config, Pid, Admin, Master, State, Log string
}

func pathsIn(dir string) paths {
	return paths{
		Config: dir + "/haproxy.cfg",
		Pid:    dir + "/haproxy.pid",
		Admin:  dir + "/admin.sock",
		Master: dir + "/master.sock",
		State:  dir + "/server-state",
		Log:    dir + "/haproxy.log",
	}
}

// validate refuses what HAProxy would misread (a space in a check path ends it) or what
// the door cannot serve; errors say what to fix in the shape's traffic.
func validate(fs []frontdoor.Frontend, private bool) error {
	keys := map[string]bool{}
	listens := map[string]string{}
	for _, f := range fs {
		if f.Key == "" {
			return fmt.Errorf("frontend has no key: give it the shape's project/deployment/shape")
		}
		if keys[f.Key] {
			return fmt.Errorf("frontend %q is listed twice: list each shape once", f.Key)
		}
		keys[f.Key] = true
		if f.Protocol != "http" && f.Protocol != "tcp" {
			return fmt.Errorf("frontend %q has protocol %q: use http or tcp", f.Key, f.Protocol)
		}
		if private && f.Backend != "" {
			return fmt.Errorf("frontend %q names backend %q but this door runs its own haproxy: drop backend or use an operator door", f.Key, f.Backend)
		}
		if !private && f.Backend == "" {
			return fmt.Errorf("frontend %q has no backend but this door drives an operator's haproxy: name the operator's backend", f.Key)
		}
		if private {
			if _, _, err := net.SplitHostPort(f.Listen); err != nil {
				return fmt.Errorf("frontend %q listens on %q: give host:port (%v)", f.Key, f.Listen, err)
			}
			if other, ok := listens[f.Listen]; ok {
				return fmt.Errorf("frontends %q and %q both listen on %s: give each its own", other, f.Key, f.Listen)
			}
			listens[f.Listen] = f.Key
		}
		if f.Hold != "" {
			if !private {
				return fmt.Errorf("frontend %q has a hold but this door drives an operator's haproxy: holds are for a private door (doc/traffic.md)", f.Key)
			}

			if _, err := netip.ParseAddrPort(f.Hold); err != nil {
				return fmt.Errorf("frontend %q has hold %q: give the hold's ip:port", f.Key, f.Hold)
			}
		}
		if f.CheckPath != "" && (!strings.HasPrefix(f.CheckPath, "/") || strings.ContainsAny(f.CheckPath, " \t\r\n")) {
			return fmt.Errorf("frontend %q has check path %q: give a path starting with / and without spaces", f.Key, f.CheckPath)
		}
		names := map[string]bool{}
		for _, s := range f.Servers {
			if s.Name == "" || strings.ContainsFunc(s.Name, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.')
			}) {
				return fmt.Errorf("frontend %q has a server named %q: instance names are letters, digits and -", f.Key, s.Name)
			}
			if names[s.Name] {
				return fmt.Errorf("frontend %q lists server %q twice", f.Key, s.Name)
			}
			names[s.Name] = true
			if _, err := netip.ParseAddr(s.Address); err != nil {
				return fmt.Errorf("server %q of %q has address %q: give an IP address", s.Name, f.Key, s.Address)
			}
			if s.Port < 1 || s.Port > 65535 {
				return fmt.Errorf("server %q of %q has port %d: give 1-65535", s.Name, f.Key, s.Port)
			}
			switch s.State {
			case frontdoor.StateServing, frontdoor.StateDraining, frontdoor.StateNotReady:
			default:
				return fmt.Errorf("server %q of %q has state %q: use serving, draining or not-ready", s.Name, f.Key, s.State)
			}
		}
	}
	return nil
}

// serverAddr is address:port, IPv6 in brackets.
func serverAddr(s frontdoor.Server) string {
	return net.JoinHostPort(s.Address, strconv.Itoa(s.Port))
}

// sortedFrontends orders frontends by key so the rendered file is stable.
func sortedFrontends(fs []frontdoor.Frontend) []frontdoor.Frontend {
	out := append([]frontdoor.Frontend(nil), fs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// layout is a digest of everything a reload must change (proxies, listeners, protocol,
// checks), leaving out the servers, which change at run time.
func layout(fs []frontdoor.Frontend) string {
	h := sha256.New()
	for _, f := range sortedFrontends(fs) {
		fmt.Fprintf(h, "%q %q %q %q\n", f.Key, f.Listen, f.Protocol, f.CheckPath)
		if f.Hold != "" {
			fmt.Fprintf(h, "hold %q\n", f.Hold)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// layoutLine is the first line of a rendered file; the door reads it back to learn what
// the running HAProxy was loaded with.
const layoutLine = "# lxd-deployd front door, layout "

// render writes a private door's whole configuration: every frontend and every server
// with its state, so that a reload or a cold start serves the same picture the runtime
// API built (HAProxy forgets dynamic servers on reload). The server-state file carries
// drain and check states across a reload.
func render(p paths, threads int, fs []frontdoor.Frontend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s\n", layoutLine, layout(fs))
	b.WriteString("# written by lxd-deployd: edits are lost at the next change\n")
	fmt.Fprintf(&b, "global\n")
	fmt.Fprintf(&b, "    stats socket %s mode 600 level admin expose-fd listeners\n", p.Admin)
	fmt.Fprintf(&b, "    stats timeout 30s\n")
	fmt.Fprintf(&b, "    nbthread %d\n", threads)
	fmt.Fprintf(&b, "    server-state-file %s\n", p.State)
	// Old workers finish their connections after a reload, up to this long.
	fmt.Fprintf(&b, "    hard-stop-after %s\n", hardStopAfter)
	b.WriteString(`
defaults
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout queue 30s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout check 2s
    load-server-state-from-file global
`)
	for _, f := range sortedFrontends(fs) {
		fe, be := frontendName(f.Key), backendName(f.Key)
		fmt.Fprintf(&b, "\n# %s\nfrontend %s\n    mode %s\n    bind %s\n    default_backend %s\n", f.Key, fe, f.Protocol, f.Listen, be)
		fmt.Fprintf(&b, "\nbackend %s\n    mode %s\n    balance roundrobin\n", be, f.Protocol)
		fmt.Fprintf(&b, "    retries %d\n    option redispatch 1\n", backendRetry)
		if f.Protocol == "http" {
			fmt.Fprintf(&b, "    option httpchk GET %s\n    http-check expect rstatus ^[234]\n", checkPath(f))
			b.WriteString("    retry-on conn-failure empty-response response-timeout\n")
			// A request that reached a server is sent again only when that is safe.
			b.WriteString("    http-request disable-l7-retry unless { method GET HEAD OPTIONS }\n")
		}
		for _, s := range sortedServers(f.Servers) {
			fmt.Fprintf(&b, "    server %s %s %s weight %d", serverName(s.Name), serverAddr(s), serverCheck, serverWeight)
			if s.State != frontdoor.StateServing {
				// A cold start has no open connections to let finish: draining and
				// not-ready alike take none (the runtime API sets drain right after).
				b.WriteString(" disabled")
			}
			b.WriteString("\n")
		}
		if f.Hold != "" {
			// Used only while no instance is up; no check: the hold is always there, and
			// named without serverPrefix, so the runtime API plans never touch it.
			fmt.Fprintf(&b, "    server %s %s backup\n", holdServer, f.Hold)
		}
	}
	return b.String()
}

func checkPath(f frontdoor.Frontend) string {
	if f.CheckPath == "" {
		return "/"
	}
	return f.CheckPath
}

func sortedServers(ss []frontdoor.Server) []frontdoor.Server {
	out := append([]frontdoor.Server(nil), ss...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// layoutOf reads the layout digest back from a rendered file ("" when there is none).
func layoutOf(cfg string) string {
	line, _, _ := strings.Cut(cfg, "\n")
	if !strings.HasPrefix(line, layoutLine) {
		return ""
	}
	return strings.TrimPrefix(line, layoutLine)
}

// backendsOf lists the backends a rendered file declares.
func backendsOf(cfg string) []string {
	var out []string
	for _, line := range strings.Split(cfg, "\n") {
		if name, ok := strings.CutPrefix(line, "backend "); ok {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}
