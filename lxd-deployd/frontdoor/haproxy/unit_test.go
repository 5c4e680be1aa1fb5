package haproxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

func TestKeyEncoding(t *testing.T) {
	for _, k := range []string{"default/web/front", "p_x/d.y/s-z", "a b/ü"} {
		enc := encodeKey(k)
		if strings.ContainsAny(enc, "/ ") {
			t.Errorf("encodeKey(%q) = %q: not a haproxy name", k, enc)
		}
		back, ok := keyOfBackend(backendName(k))
		if !ok || back != k {
			t.Errorf("keyOfBackend(backendName(%q)) = %q, %v", k, back, ok)
		}
	}
	if _, ok := keyOfBackend("operators_backend"); ok {
		t.Error("a backend the door did not name was taken for one of its own")
	}
	if _, ok := decodeKey("be_zz_"); ok {
		t.Error("a truncated escape decoded")
	}
}

func testFrontends() []frontdoor.Frontend {
	return []frontdoor.Frontend{{
		Key: "default/web/front", Listen: "127.0.0.1:8080", Protocol: "http", CheckPath: "/healthz",
		Servers: []frontdoor.Server{
			{Name: "web-2", Address: "10.0.0.2", Port: 80, State: frontdoor.StateDraining},
			{Name: "web-1", Address: "10.0.0.1", Port: 80, State: frontdoor.StateServing},
			{Name: "web-3", Address: "fd42::3", Port: 80, State: frontdoor.StateNotReady},
		},
	}, {
		Key: "default/db/main", Listen: "127.0.0.1:5432", Protocol: "tcp",
		Servers: []frontdoor.Server{{Name: "db-1", Address: "10.0.0.9", Port: 5432, State: frontdoor.StateServing}},
	}}
}

func TestRender(t *testing.T) {
	p := pathsIn("/run/fd")
	cfg := render(p, 1, testFrontends())
	for _, want := range []string{
		"stats socket /run/fd/admin.sock mode 600 level admin expose-fd listeners",
		"server-state-file /run/fd/server-state",
		"load-server-state-from-file global",
		"frontend fe_default_2fweb_2ffront\n    mode http\n    bind 127.0.0.1:8080\n    default_backend be_default_2fweb_2ffront",
		"option httpchk GET /healthz",
		"retry-on conn-failure empty-response response-timeout",
		"option redispatch 1",
		"server ld-web-1 10.0.0.1:80 " + serverCheck + " weight 100\n",
		"server ld-web-2 10.0.0.2:80 " + serverCheck + " weight 100 disabled\n",
		"server ld-web-3 [fd42::3]:80 ",
		"backend be_default_2fdb_2fmain\n    mode tcp\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("rendered configuration lacks %q:\n%s", want, cfg)
		}
	}
	tcp := cfg[strings.Index(cfg, "backend be_default_2fdb_2fmain"):]
	tcp = tcp[:strings.Index(tcp, "frontend")]
	if strings.Contains(tcp, "httpchk") || strings.Contains(tcp, "retry-on") {
		t.Errorf("a tcp backend got http settings:\n%s", tcp)
	}
	// Order-independent: the same picture renders the same file.
	rev := testFrontends()
	rev[0], rev[1] = rev[1], rev[0]
	if render(p, 1, rev) != cfg {
		t.Error("rendering depends on the frontends' order")
	}
	if got := backendsOf(cfg); !reflect.DeepEqual(got, []string{"be_default_2fdb_2fmain", "be_default_2fweb_2ffront"}) {
		t.Errorf("backendsOf = %v", got)
	}
	if layoutOf(cfg) != layout(testFrontends()) || layoutOf("global\n") != "" {
		t.Error("the layout line does not read back")
	}
	// Servers change at run time; only proxies and listeners change the layout.
	moved := testFrontends()
	moved[0].Servers = nil
	if layout(moved) != layout(testFrontends()) {
		t.Error("a server change changed the layout (it would reload haproxy)")
	}
	moved[0].Listen = "127.0.0.1:8081"
	if layout(moved) == layout(testFrontends()) {
		t.Error("a listener change left the layout alone (haproxy would not reload)")
	}
}

// TestRenderAccepted has haproxy itself check the rendered file.
func TestRenderAccepted(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed (apt install haproxy): cannot check the rendered configuration")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(render(pathsIn(dir), 2, testFrontends())), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

func TestValidate(t *testing.T) {
	ok := testFrontends()
	if err := validate(ok, true); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(f *frontdoor.Frontend){
		"no key":        func(f *frontdoor.Frontend) { f.Key = "" },
		"protocol":      func(f *frontdoor.Frontend) { f.Protocol = "udp" },
		"listen":        func(f *frontdoor.Frontend) { f.Listen = "8080" },
		"backend":       func(f *frontdoor.Frontend) { f.Backend = "be" },
		"check path":    func(f *frontdoor.Frontend) { f.CheckPath = "/a b" },
		"server name":   func(f *frontdoor.Frontend) { f.Servers[0].Name = "a/b" },
		"address":       func(f *frontdoor.Frontend) { f.Servers[0].Address = "web.lxd" },
		"port":          func(f *frontdoor.Frontend) { f.Servers[0].Port = 0 },
		"state":         func(f *frontdoor.Frontend) { f.Servers[0].State = "up" },
		"same listener": func(f *frontdoor.Frontend) { f.Listen = "127.0.0.1:5432" },
		"same server":   func(f *frontdoor.Frontend) { f.Servers[1].Name = f.Servers[0].Name },
	} {
		fs := testFrontends()
		mutate(&fs[0])
		if err := validate(fs, true); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := validate(ok, false); err == nil {
		t.Error("an operator door accepted a frontend without a backend")
	}
}

const serversStateOut = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 be_a 1 ld-web-1 10.0.0.1 2 0 100 100 7 15 3 4 6 0 0 0 - 80 - 0 0 - - 0
3 be_a 2 ld-web-2 10.0.0.2 2 8 100 100 2 15 3 3 6 0 0 0 - 80 - 0 0 - - 0
3 be_a 3 static1 10.0.0.7 2 0 1 1 2 15 3 3 6 0 0 0 - 80 - 0 0 - - 0
4 be_b 1 ld-old 10.0.0.5 0 1 100 100 2 15 3 3 6 0 0 0 - 8080 - 0 0 - - 0

`

func TestParseServersState(t *testing.T) {
	got, err := parseServersState(serversStateOut)
	if err != nil {
		t.Fatal(err)
	}
	want := []serverState{
		{Backend: "be_a", Name: "ld-web-1", Addr: "10.0.0.1", Port: 80, Admin: 0, Weight: 100},
		{Backend: "be_a", Name: "ld-web-2", Addr: "10.0.0.2", Port: 80, Admin: 8, Weight: 100},
		{Backend: "be_a", Name: "static1", Addr: "10.0.0.7", Port: 80, Admin: 0, Weight: 1},
		{Backend: "be_b", Name: "ld-old", Addr: "10.0.0.5", Port: 8080, Admin: 1, Weight: 100},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseServersState("1\n# be_id be_name\n3 be_a\n"); err == nil {
		t.Error("a state without server columns parsed")
	}
	if got, err := parseServersState("1\n"); err != nil || len(got) != 0 {
		t.Errorf("no servers: %v %v", got, err)
	}
}

func cmds(steps []step) []string {
	var out []string
	for _, s := range steps {
		c := s.Cmd
		if s.Optional {
			c += " (optional)"
		}
		out = append(out, c)
	}
	return out
}

func TestPlanServers(t *testing.T) {
	current, _ := parseServersState(serversStateOut)
	want := []frontdoor.Server{
		{Name: "web-1", Address: "10.0.0.1", Port: 80, State: frontdoor.StateDraining},
		{Name: "web-2", Address: "10.0.0.2", Port: 80, State: frontdoor.StateServing},
		{Name: "web-4", Address: "10.0.0.4", Port: 80, State: frontdoor.StateServing},
		{Name: "web-5", Address: "10.0.0.5", Port: 80, State: frontdoor.StateNotReady},
	}
	got := cmds(planServers("be_a", current, want))
	exp := []string{
		"set server be_a/ld-web-1 state drain",
		"set server be_a/ld-web-2 state ready",
		"add server be_a/ld-web-4 10.0.0.4:80 " + serverCheck + " weight 100",
		"enable health be_a/ld-web-4",
		"set server be_a/ld-web-4 state ready",
		"add server be_a/ld-web-5 10.0.0.5:80 " + serverCheck + " weight 100",
		"enable health be_a/ld-web-5",
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
	// The same picture again: nothing to do (Apply is idempotent and cheap).
	after := []serverState{
		{Backend: "be_a", Name: "ld-web-1", Addr: "10.0.0.1", Port: 80, Admin: 8, Weight: 100},
		{Backend: "be_a", Name: "ld-web-2", Addr: "10.0.0.2", Port: 80, Weight: 100},
		{Backend: "be_a", Name: "ld-web-4", Addr: "10.0.0.4", Port: 80, Weight: 100},
		{Backend: "be_a", Name: "ld-web-5", Addr: "10.0.0.5", Port: 80, Admin: 1, Weight: 100},
	}
	if got := planServers("be_a", after, want); len(got) != 0 {
		t.Errorf("an applied picture planned %v", cmds(got))
	}
	// Removal: maint, cut what outlived the drain, delete; the operator's static1 stays.
	got = cmds(planServers("be_a", current, nil))
	exp = []string{
		"set server be_a/ld-web-1 state maint", "shutdown sessions server be_a/ld-web-1", "del server be_a/ld-web-1 (optional)",
		"set server be_a/ld-web-2 state maint", "shutdown sessions server be_a/ld-web-2", "del server be_a/ld-web-2 (optional)",
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("removal: got %v", got)
	}
	// A moved instance, and a server whose weight was changed by hand.
	moved := []serverState{{Backend: "be_b", Name: "ld-old", Addr: "10.0.0.5", Port: 8080, Admin: 0, Weight: 3}}
	got = cmds(planServers("be_b", moved, []frontdoor.Server{{Name: "old", Address: "10.0.0.6", Port: 80, State: frontdoor.StateServing}}))
	exp = []string{"set server be_b/ld-old addr 10.0.0.6 port 80", "set weight be_b/ld-old 100"}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("moved: got %v", got)
	}
}

func TestCheckAnswer(t *testing.T) {
	for _, c := range []struct {
		cmd, answer string
		ok          bool
	}{
		{"add server be/s 1.2.3.4:80", "New server registered.\n\n", true},
		{"add server be/s 1.2.3.4:80", "No such backend.\n\n", false},
		{"del server be/s", "Server deleted.\n\n", true},
		{"del server be/s", "Server still has connections attached to it, cannot remove it.\n\n", false},
		{"set server be/s state drain", "\n", true},
		{"set server be/s state drain", "No such server.\n\n", false},
	} {
		err := checkAnswer(c.cmd, c.answer)
		if (err == nil) != c.ok {
			t.Errorf("%q answered %q: err %v", c.cmd, c.answer, err)
		}
	}
}

const showStatOut = `# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime
fe_a,FRONTEND,,,5,9,9979,100,0,0,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,40,0,41,,,,0,100,0,0,0,0,,40,41,100,,,0,0,0,0,,,,,,,,
be_a,ld-web-1,0,0,3,4,,60,0,0,,0,,0,0,0,0,UP,100,1,0,0,0,10,0,,1,3,1,,60,,2,25,,30,L7OK,200,1,0,60,0,0,0,0,,,,,0,0,,,,,1,,,0,0,7,9
be_a,ld-web-2,1,1,2,2,,40,0,0,,0,,0,0,0,0,DOWN,100,1,0,1,1,1,1,,1,3,2,,40,,2,15,,20,L4CON,,0,0,40,0,0,0,0,,,,,0,0,,,,,1,,,0,0,12,20
be_a,static1,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,1,1,0,0,0,1,1,,1,3,3,,0,,2,0,,0,,,,0,0,0,0,0,0,,,,,0,0,,,,,-1,,,0,0,0,0
be_a,BACKEND,1,1,5,9,998,100,0,0,0,0,,0,0,0,0,UP,100,1,0,,0,10,0,,1,3,0,,100,,1,40,,41,,,,0,100,0,0,0,0,,,,100,0,0,0,0,0,0,1,,,0,0,9,12
other,BACKEND,0,0,0,0,998,0,0,0,0,0,,0,0,0,0,UP,0,0,0,,0,10,0,,1,4,0,,0,,1,0,,0,,,,0,0,0,0,0,0,,,,0,0,0,0,0,0,0,-1,,,0,0,0,0

`

func TestStatsFromRows(t *testing.T) {
	rows, err := parseStat(showStatOut)
	if err != nil {
		t.Fatal(err)
	}
	got := statsFromRows(rows, func(be string) (string, bool) {
		if be == "be_a" {
			return "default/web/front", true
		}
		return "", false
	})
	want := map[string]frontdoor.FrontendStats{"default/web/front": {
		Sessions: 5, RequestRate: 40, Queue: 1, ResponseTime: 9 * time.Millisecond,
		Servers: map[string]frontdoor.ServerStats{
			"web-1": {Sessions: 3, RequestRate: 25, ResponseTime: 7 * time.Millisecond, Up: true},
			"web-2": {Sessions: 2, RequestRate: 15, Queue: 1, ResponseTime: 12 * time.Millisecond, Up: false},
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if n, ok := frontdoor.Sessions(got, "default/web/front", "web-2"); !ok || n != 2 {
		t.Errorf("Sessions = %d, %v", n, ok)
	}
	if _, ok := frontdoor.Sessions(got, "default/web/front", "web-9"); ok {
		t.Error("Sessions knows a server the stats do not")
	}
}

func TestParseShowProc(t *testing.T) {
	out := `#<PID>          <type>          <reloads>       <uptime>        <version>
6294            master          2 [failed: 1]   0d00h10m29s     2.6.12
# workers
18443           worker          0               0d00h00m02s     2.6.12
18091           worker          1               0d00h00m40s     2.6.12
# programs

`
	w, failed, err := parseShowProc(out)
	if err != nil || w != 18443 || failed != 1 {
		t.Errorf("got worker %d failed %d err %v", w, failed, err)
	}
	if got := parseWorkers(out); !reflect.DeepEqual(got, []int{18443, 18091}) {
		t.Errorf("parseWorkers = %v", got)
	}
	if _, _, err := parseShowProc("#<PID> <type>\n1 master 0 [failed: 0] x y\n# workers\n"); err == nil {
		t.Error("a master without workers parsed")
	}
}
