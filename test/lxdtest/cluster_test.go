package lxdtest_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestCluster forms a 3-member cluster, places containers with --target on a member and on
// a cluster group, and kills and restarts a member.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := lxdtest.StartCluster(t, lxdtest.ClusterOptions{Groups: map[string][]string{"gpu": {"m3"}}})
	t.Logf("StartCluster took %v (%s)", time.Since(start), c.Dir)

	cl := c.Client(t)
	defer cl.Disconnect()
	members, err := cl.GetClusterMembers()
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 3 {
		t.Fatalf("cluster has %d members, want 3", len(members))
	}
	for _, m := range members {
		if m.Status != "Online" {
			t.Errorf("member %s is %s, want Online", m.ServerName, m.Status)
		}
	}

	prefix := fmt.Sprintf("pc-%d-", os.Getpid())
	launch := func(name, target string) {
		t.Helper()
		start := time.Now()
		op, err := cl.UseTarget(target).CreateInstance(api.InstancesPost{
			Name:   name,
			Type:   api.InstanceTypeContainer,
			Source: api.InstanceSource{Type: "image", Alias: lxdtest.Image},
		})
		if err == nil {
			err = op.Wait()
		}
		if err == nil {
			op, err = cl.UpdateInstanceState(name, api.InstanceStatePut{Action: "start", Timeout: -1}, "")
		}
		if err == nil {
			err = op.Wait()
		}
		if err != nil {
			t.Fatalf("launch %s on %s: %v", name, target, err)
		}
		t.Logf("launch %s on %s took %v", name, target, time.Since(start))
	}
	launch(prefix+"a", "m2")
	launch(prefix+"b", "@gpu")
	locations := c.Locations(t, prefix)
	if locations[prefix+"a"] != "m2" || locations[prefix+"b"] != "m3" {
		t.Fatalf("locations %v, want a on m2 and b on m3 (group gpu)", locations)
	}

	m2 := c.Member(t, "m2")
	m2.Kill(t)
	start = time.Now()
	took := c.WaitMemberStatus(t, "m2", "Offline", 60*time.Second)
	t.Logf("m2 offline %v after SIGKILL", took)
	m2.Restart(t)
	took = c.WaitMemberStatus(t, "m2", "Online", 60*time.Second)
	t.Logf("m2 online %v after restart", took)
	if st := state(t, cl, prefix+"a"); st != api.Running {
		t.Errorf("%s is %s after its member's restart, want Running", prefix+"a", st)
	}
}

func state(t *testing.T, cl lxd.InstanceServer, name string) api.StatusCode {
	t.Helper()
	inst, _, err := cl.GetInstance(name)
	if err != nil {
		t.Fatal(err)
	}
	return inst.StatusCode
}
