package doorkeeper

import (
	"sort"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
)

// TrafficStats flattens the door's last figures for /1.0/metrics: each shape's totals, then
// each of its instances (nil keeper or no door: none).
func (k *Keeper) TrafficStats() []metrics.TrafficStat {
	var out []metrics.TrafficStat
	for _, s := range k.Stats() {
		out = append(out, metrics.TrafficStat{Project: s.Project, Deployment: s.Deployment, Shape: s.Shape,
			RequestRate: s.RequestRate, Sessions: s.Sessions, Queue: s.Queue, ResponseTimeSeconds: s.ResponseTime.Seconds()})
		names := make([]string, 0, len(s.Servers))
		for name := range s.Servers {
			names = append(names, name)
		}

		sort.Strings(names)
		for _, name := range names {
			server := s.Servers[name]
			out = append(out, metrics.TrafficStat{Project: s.Project, Deployment: s.Deployment, Shape: s.Shape, Instance: name,
				RequestRate: server.RequestRate, Sessions: server.Sessions, Queue: server.Queue, ResponseTimeSeconds: server.ResponseTime.Seconds()})
		}
	}

	return out
}
