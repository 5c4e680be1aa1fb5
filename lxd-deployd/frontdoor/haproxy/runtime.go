package haproxy

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// socketTimeout bounds one command on a HAProxy socket when the caller's context has no
// sooner deadline.
const socketTimeout = 5 * time.Second

// command sends one command to a HAProxy CLI socket (the admin socket or the master
// socket) and returns its whole answer. Each command has its own connection: the
// socket's non-interactive mode answers and closes, so the answer's end is EOF.
func command(ctx context.Context, socket, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, socketTimeout)
	defer cancel()
	var d net.Dialer
	// A path is a unix socket; host:port is a TCP one (`stats socket ipv4@ADDR:PORT`): an
	// operator's HAProxy several members of a cluster reach (doc/traffic.md).
	network := "unix"
	if !strings.Contains(socket, "/") {
		network = "tcp"
	}
	conn, err := d.DialContext(ctx, network, socket)
	if err != nil {
		return "", fmt.Errorf("reach haproxy at %s: %w (is it running, and is this its admin socket?)", socket, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("send %q to haproxy at %s: %w", firstWords(cmd), socket, err)
	}
	// Half-close: the master socket answers only once it sees the end of the input.
	if hc, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("read haproxy's answer to %q at %s: %w", firstWords(cmd), socket, err)
	}
	return string(out), nil
}

// firstWords names a command in an error without its arguments' detail.
func firstWords(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

// checkAnswer turns a runtime command's answer into an error. HAProxy's CLI has no status
// codes: commands that change state answer nothing (set, enable) or a fixed sentence
// (add server, del server) on success, and an explanation otherwise.
func checkAnswer(cmd, answer string) error {
	a := strings.TrimSpace(answer)
	switch {
	case strings.HasPrefix(cmd, "add server "):
		if strings.Contains(a, "New server registered") {
			return nil
		}
	case strings.HasPrefix(cmd, "del server "):
		if strings.Contains(a, "Server deleted") {
			return nil
		}
	default:
		if a == "" {
			return nil
		}
	}
	return &AnswerError{Command: firstWords(cmd), Answer: a}
}

// AnswerError is HAProxy refusing a runtime command.
type AnswerError struct {
	Command, Answer string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("haproxy refused %q: %s", e.Command, strings.ReplaceAll(e.Answer, "\n", " "))
}

// serverState is one server as `show servers state` reports it.
type serverState struct {
	Backend, Name, Addr string
	Port                int
	// Admin is the srv_admin_state bit field: maint bits (0x01 forced, 0x02 inherited,
	// 0x04 config, 0x20 resolution) and drain bits (0x08 forced, 0x10 inherited).
	Admin int
	// Weight is the user weight (srv_uweight).
	Weight int
}

const (
	adminMaint = 0x01 | 0x02 | 0x04 | 0x20
	adminDrain = 0x08 | 0x10
)

// parseServersState reads `show servers state`: a version line, a '#' header naming the
// columns, then one space-separated line per server.
func parseServersState(out string) ([]serverState, error) {
	var cols map[string]int
	var servers []serverState
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			cols = map[string]int{}
			for i, c := range strings.Fields(strings.TrimPrefix(line, "#")) {
				cols[c] = i
			}
			continue
		}
		if cols == nil {
			continue // the version line
		}
		f := strings.Fields(line)
		get := func(name string) (string, error) {
			i, ok := cols[name]
			if !ok || i >= len(f) {
				return "", fmt.Errorf("haproxy's server state has no %s column: is this haproxy 2.x?", name)
			}
			return f[i], nil
		}
		var s serverState
		var err error
		var v string
		if s.Backend, err = get("be_name"); err != nil {
			return nil, err
		}
		if s.Name, err = get("srv_name"); err != nil {
			return nil, err
		}
		if s.Addr, err = get("srv_addr"); err != nil {
			return nil, err
		}
		for _, n := range []struct {
			col string
			dst *int
		}{{"srv_port", &s.Port}, {"srv_admin_state", &s.Admin}, {"srv_uweight", &s.Weight}} {
			if v, err = get(n.col); err != nil {
				return nil, err
			}
			if *n.dst, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("haproxy's server state has %s %q for %s/%s: not a number", n.col, v, s.Backend, s.Name)
			}
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// statRow is one line of `show stat` by column name.
type statRow map[string]string

// parseStat reads `show stat`'s CSV (its header line starts with "# ").
func parseStat(out string) ([]statRow, error) {
	out = strings.TrimPrefix(strings.TrimLeft(out, "\n"), "# ")
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read haproxy's show stat: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("haproxy's show stat answered nothing: is this its admin socket?")
	}
	head := recs[0]
	var rows []statRow
	for _, rec := range recs[1:] {
		if len(rec) == 0 || (len(rec) == 1 && rec[0] == "") {
			continue
		}
		row := statRow{}
		for i, v := range rec {
			if i < len(head) {
				row[head[i]] = v
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (r statRow) int(col string) int {
	v, _ := strconv.Atoi(r[col])
	return v
}

// up is whether HAProxy's own check leaves the server in rotation: DOWN (also "DOWN
// 1/2", coming up) and maintenance are out; UP, "UP 1/2" (going down), DRAIN, NOLB and
// "no check" are in.
func (r statRow) up() bool {
	s := r["status"]
	return s != "" && !strings.HasPrefix(s, "DOWN") && !strings.HasPrefix(s, "MAINT")
}

// out is whether the server's admin state keeps new connections from it: DRAIN and
// MAINT (also "MAINT (via ...)"). A server both drained and DOWN shows DOWN: out is then
// false, and a drain waiting on it waits for its timeout or its check to come back.
func (r statRow) out() bool {
	s := r["status"]
	return strings.HasPrefix(s, "DRAIN") || strings.HasPrefix(s, "MAINT")
}

// parseShowProc reads the master socket's `show proc`: the current worker's pid and how many
// reloads failed.
func parseShowProc(out string) (worker int, failed int, err error) {
	section := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "# "):
			section = strings.TrimPrefix(line, "# ")
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if f[1] == "master" {
			if i := strings.Index(line, "[failed: "); i >= 0 {
				rest := line[i+len("[failed: "):]
				n, _, _ := strings.Cut(rest, "]")
				failed, _ = strconv.Atoi(strings.TrimSpace(n))
			}
			continue
		}
		// The current worker has survived no reload; old workers finishing their
		// connections count theirs.
		if section == "workers" && f[1] == "worker" && len(f) > 2 && f[2] == "0" && worker == 0 {
			worker, _ = strconv.Atoi(f[0])
		}
	}
	if worker == 0 {
		return 0, failed, fmt.Errorf("haproxy's master lists no worker: see its log")
	}
	return worker, failed, nil
}

// parseWorkers lists every worker pid of `show proc`, old workers included.
func parseWorkers(out string) []int {
	var pids []int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[1] == "worker" {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
