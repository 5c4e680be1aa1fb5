package test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestClusterFailover runs three members beside one private LXD. An operation started on
// m1 is waited on through m2 with LXD's Go client and shows in m3's /1.0/events. Then,
// under continuous writes against m2 and governor launches against m2 and m3, m1 (the
// database leader) is SIGKILLed: every acknowledged write and launch is there afterwards,
// the shape's bound held, LXD and the records agree; m1 restarts and catches up. A
// governor token used through m1 is refused through m2.
func TestClusterFailover(t *testing.T) {
	const max = 5
	private := lxdtest.Shared(t)
	m1, m2, m3 := threeMembers(t, private.Socket)
	for _, m := range []*daemon{m1, m2, m3} {
		waitLXDOnline(t, m)
	}

	env := &governorEnv{d: m1, lxd: private, lxdConn: private.Client(t), admin: m1.Unix(t), prefix: "tclusterfailover"}
	t.Cleanup(func() { env.cleanupLXD(t) })
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, max)))
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, "gov-cert", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "gov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))

	var launched, refused, acked, rows []string
	// m3's event stream, through LXD's client.
	phase(t, "an operation across members", func(t *testing.T) {
		viaM3, err := lxd.ConnectLXDUnix(m3.Socket, nil)
		must(t, err)
		listener, err := viaM3.GetEvents()
		must(t, err)
		defer listener.Disconnect()
		var mu sync.Mutex
		seen := map[string]string{} // operation id -> location
		_, err = listener.AddHandler([]string{"operation"}, func(e lxdapi.Event) {
			mu.Lock()
			seen[string(e.Metadata)] = e.Location
			mu.Unlock()
		})
		must(t, err)
		time.Sleep(2 * relayWait) // the members' relays are up

		op, err := m1.Unix(t).CreateDeploymentShapeInstance("dep1", "web", env.name("first"))
		must(t, err)
		viaM2, err := lxd.ConnectLXDUnix(m2.Socket, nil)
		must(t, err)
		waited, _, err := viaM2.GetOperationWait(op.ID, 60)
		must(t, err)
		if waited.StatusCode != lxdapi.Success || waited.Location != "m1" {
			t.Fatalf("operation waited on through m2: %+v", waited)
		}

		listed, err := m3.Unix(t).GetOperations()
		must(t, err)
		found := false
		for _, o := range listed {
			found = found || (o.ID == op.ID && o.Location == "m1")
		}

		if !found {
			t.Fatalf("m3 does not list m1's operation %s: %+v", op.ID, listed)
		}

		waitUntil(t, "m3's /1.0/events showing m1's operation "+op.ID+" finishing with location m1", 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			location := ""
			for metadata, loc := range seen {
				if strings.Contains(metadata, op.ID) && strings.Contains(metadata, `"status":"Success"`) {
					location = loc
				}
			}

			return location == "m1"
		}, every(100*time.Millisecond), showing(func() string {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprintf("saw %d operation events", len(seen))
		}))
	})

	phase(t, "a governor token replayed", func(t *testing.T) {
		replayAcrossMembers(t, env, m1, m2)
	})

	// Writes against m2, launches against m2 and m3 (more than the bound allows), and the
	// leader dies in the middle.
	phase(t, "the leader killed under load", func(t *testing.T) {
		load := startWrites(t, m2, "w")
		governors := []*client.Server{m2.HTTPS(t, id), m3.HTTPS(t, id)}
		var launchMu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 300 * time.Millisecond)
				name := env.name(fmt.Sprintf("l%d", i))
				op, err := governors[i%2].CreateDeploymentShapeInstance("dep1", "web", name)
				if err == nil {
					ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
					err = op.Wait(ctx)
					cancel()
				}

				launchMu.Lock()
				defer launchMu.Unlock()
				if err == nil {
					launched = append(launched, name)
				} else {
					refused = append(refused, fmt.Sprintf("%s: %v", name, err))
				}
			}(i)
		}

		time.Sleep(time.Second)
		m1.Kill(t)
		wg.Wait()
		time.Sleep(time.Second)
		worst, ackedWrites, failed := load.finish()
		acked = ackedWrites // for the phase after the restart
		t.Logf("SIGKILL of the leader: longest write %v, %d writes acknowledged, failed %v; launched %v, refused %v", worst, len(acked), failed, launched, refused)
		if lost := missing(t, m3, acked); len(lost) > 0 {
			t.Fatalf("acknowledged writes lost: %v", lost)
		}
	})

	// Every acknowledged launch is recorded and in LXD, nothing else is, and the bound held.
	phase(t, "records and LXD agree", func(t *testing.T) {
		rows = instanceNames(t, m3.Unix(t))
		live := env.lxdInstances(t)
		liveNames := []string{}
		for name := range live {
			liveNames = append(liveNames, name)
		}

		sort.Strings(liveNames)
		if len(rows) > max || strings.Join(rows, ",") != strings.Join(liveNames, ",") {
			t.Fatalf("records %v and LXD %v must agree within the bound %d", rows, liveNames, max)
		}

		for _, name := range append(launched, env.name("first")) {
			if !containsString(rows, name) {
				t.Fatalf("acknowledged launch %s is missing: records %v", name, rows)
			}
		}

		for _, reason := range refused {
			if !strings.Contains(reason, "maximum") {
				t.Fatalf("a launch failed for another reason than the bound: %s", reason)
			}
		}
	})

	// m1 comes back and catches up.
	phase(t, "m1 catches up", func(t *testing.T) {
		m1.Start(t)
		if lost := missing(t, m1, acked); len(lost) > 0 {
			t.Fatalf("restarted m1 lacks acknowledged writes: %v", lost)
		}

		if got := instanceNames(t, m1.Unix(t)); strings.Join(got, ",") != strings.Join(rows, ",") {
			t.Fatalf("restarted m1 sees instances %v, the others %v", got, rows)
		}
	})
}

// replayAcrossMembers launches an instance with a governor socket through m1 and has m2
// serve a socket for it too (members re-create the sockets of every such instance when
// they start): a governor token used through m1 is refused through m2.
func replayAcrossMembers(t *testing.T, env *governorEnv, m1 *daemon, m2 *daemon) {
	t.Helper()
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}}))
	id, name := env.launchGovernorInstance(t, "dep2", "replay-cert", "gov", "read-only")
	m2.Restart(t)

	signer, err := client.NewTokenSigner(id.CertPEM, id.KeyPEM, api.DefaultProject, "dep2", name)
	must(t, err)
	token, err := signer.Token()
	must(t, err)
	source := func() (string, error) { return token, nil }
	viaM1, err := client.ConnectUnix(filepath.Join(m1.DataDir, "governor", name+".sock"), &client.ConnectionArgs{TokenSource: source})
	must(t, err)
	viaM2, err := client.ConnectUnix(filepath.Join(m2.DataDir, "governor", name+".sock"), &client.ConnectionArgs{TokenSource: source})
	must(t, err)
	_, err = viaM1.GetDeploymentShapeInstanceNames("dep2", "gov")
	must(t, err)
	_, err = viaM2.GetDeploymentShapeInstanceNames("dep2", "gov")
	expectCode(t, err, 401, "a token replayed on another member")
	if !strings.Contains(err.Error(), "already used") {
		t.Fatalf("the replay must be refused as one: %v", err)
	}

	// A fresh token works through m2: it was the replay that was refused, not the socket.
	token, err = signer.Token()
	must(t, err)
	_, err = viaM2.GetDeploymentShapeInstanceNames("dep2", "gov")
	must(t, err)
}

// relayWait is how long members take to open their event relays to each other.
const relayWait = 2 * time.Second

// instanceNames returns the sorted names of dep1/web's instance records.
func instanceNames(t testing.TB, c *client.Server) []string {
	t.Helper()
	instances, err := c.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	names := []string{}
	for _, instance := range instances {
		names = append(names, instance.Name)
	}

	sort.Strings(names)
	return names
}

func containsString(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}

	return false
}
