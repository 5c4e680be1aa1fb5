package main

import (
	"strings"

	lxd "github.com/canonical/lxd/client"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// instanceUsage reads the CPU and memory use of a project's running instances from one
// LXD /1.0/metrics call (LXD caches it for a few seconds and answers in milliseconds, where
// recursion=2 state reads take hundreds), by instance name. Usage is a nicety of the
// listing: when LXD does not answer, the listing goes without it.
func instanceUsage(client lxd.InstanceServer, project string) map[string]api.DeploymentInstanceUsage {
	text, err := client.UseProject(project).GetMetrics()
	if err != nil {
		return nil
	}

	samples, err := webhooks.ParseLXDMetrics(text)
	if err != nil {
		return nil
	}

	out := make(map[string]api.DeploymentInstanceUsage, len(samples))
	for key, s := range samples {
		sampleProject, name, ok := strings.Cut(key, "/")
		if !ok || sampleProject != project {
			continue
		}

		out[name] = api.DeploymentInstanceUsage{CPUSeconds: s.CPUSeconds, MemoryUsageBytes: s.MemoryUsed, MemoryLimitBytes: s.MemoryTotal}
	}

	return out
}
