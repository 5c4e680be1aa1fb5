package test

import (
	"bytes"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// lxdInstances returns the names of this test's instances in LXD tagged as dep1's.
func (env *governorEnv) lxdInstances(t testing.TB) map[string]lxdapi.Instance {
	t.Helper()
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	must(t, err)
	result := map[string]lxdapi.Instance{}
	for _, instance := range instances {
		if strings.HasPrefix(instance.Name, env.prefix+"-") && instance.Config["user.lxd-deployd.deployment"] == "dep1" {
			result[instance.Name] = instance
		}
	}

	return result
}

// cleanupLXD deletes whatever this test left in the shared LXD.
func (env *governorEnv) cleanupLXD(t testing.TB) {
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return
	}

	for _, instance := range instances {
		if !strings.HasPrefix(instance.Name, env.prefix+"-") {
			continue
		}

		env.removeFromLXD(instance)
	}
}

// cleanupRollouts deletes the rollout-named instances of dep1 left in LXD (after a crash
// test, say), so they do not outlive the test.
func (env *governorEnv) cleanupRollouts(t testing.TB) {
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return
	}

	for _, instance := range instances {
		if !strings.HasPrefix(instance.Name, "web-r") || instance.Config["user.lxd-deployd.deployment"] != "dep1" {
			continue
		}

		env.removeFromLXD(instance)
	}
}

// removeFromLXD deletes an instance from the shared LXD whatever its protection and state,
// as a best effort: cleanups must not fail a test that has passed.
func (env *governorEnv) removeFromLXD(instance lxdapi.Instance) {
	put := instance.Writable()
	delete(put.Config, "security.protection.delete")
	if op, err := env.lxdConn.UpdateInstance(instance.Name, put, ""); err == nil {
		_ = op.Wait()
	}

	if op, err := env.lxdConn.UpdateInstanceState(instance.Name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
		_ = op.Wait()
	}

	if op, err := env.lxdConn.DeleteInstance(instance.Name); err == nil {
		_ = op.Wait()
	}
}

// launchByHand creates and starts a busybox instance directly in the shared LXD, as a
// user would without lxd-deployd.
func (env *governorEnv) launchByHand(name string) error {
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: name, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
	if err == nil {
		err = op.Wait()
	}

	if err == nil {
		op, err = env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, "")
	}

	if err == nil {
		err = op.Wait()
	}

	return err
}

// deleteByHand removes an instance from the shared LXD whatever its protection.
func (env *governorEnv) deleteByHand(name string) {
	instance, _, err := env.lxdConn.GetInstance(name)
	if err == nil {
		env.removeFromLXD(*instance)
	}
}

// pushFile copies content into an instance.
func (env *governorEnv) pushFile(t testing.TB, instance string, path string, content []byte, mode int) {
	t.Helper()
	must(t, env.lxdConn.CreateInstanceFile(instance, path, lxdInstanceFile(content, mode)))
}

// exec runs a command in an instance and returns its exit code, stdout and stderr.
func (env *governorEnv) exec(t testing.TB, instance string, command ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	done := make(chan bool)
	op, err := env.lxdConn.ExecInstance(instance, lxdapi.InstanceExecPost{Command: command, WaitForWS: true}, lxdExecArgs(&stdout, &stderr, done))
	must(t, err)
	must(t, op.Wait())
	<-done
	code, _ := op.Get().Metadata["return"].(float64)
	return int(code), stdout.String(), stderr.String()
}
