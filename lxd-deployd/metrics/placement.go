package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// PlacementStat is a shape's instances on one LXD cluster member (doc/placement.md).
type PlacementStat struct {
	Project    string
	Deployment string
	Shape      string
	Member     string
	Instances  int

	// Unreachable is true while LXD reports the member offline.
	Unreachable bool
}

// ClusterMemberStat is one LXD cluster member as the last probe saw it.
type ClusterMemberStat struct {
	Name   string
	Online bool
}

// placementCollector reports instances per shape and LXD member, and the members' status.
// The member label takes only the names LXD lists (instances recorded on a member LXD no
// longer lists count under "other"), so the label set is bounded by the cluster's size.
type placementCollector struct {
	placement func(ctx context.Context) ([]PlacementStat, []ClusterMemberStat, error)

	perMember *prometheus.Desc
	online    *prometheus.Desc
}

func newPlacementCollector(source func(ctx context.Context) ([]PlacementStat, []ClusterMemberStat, error)) *placementCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	return &placementCollector{
		placement: source,
		perMember: prometheus.NewDesc(name("shape_instances_member"), "Instances a shape counts on each LXD cluster member (state unreachable while LXD reports the member offline, else reachable); LXD clusters only.", append(append([]string{}, shapeLabels...), "member", "state"), nil),
		online:    prometheus.NewDesc(name("lxd_cluster_member_online"), "1 while LXD reports the cluster member online, 0 otherwise; LXD clusters only.", []string{"member"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *placementCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.perMember
	ch <- c.online
}

// Collect implements prometheus.Collector.
func (c *placementCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	stats, members, err := c.placement(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.perMember, err)
		return
	}

	known := map[string]bool{}
	for _, m := range members {
		known[m.Name] = true
		ch <- prometheus.MustNewConstMetric(c.online, prometheus.GaugeValue, boolValue(m.Online), m.Name)
	}

	type key struct{ project, deployment, shape, member, state string }
	sums := map[key]int{}
	var order []key
	for _, s := range stats {
		member := s.Member
		if !known[member] {
			member = "other"
		}

		state := "reachable"
		if s.Unreachable {
			state = "unreachable"
		}

		k := key{s.Project, s.Deployment, s.Shape, member, state}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}

		sums[k] += s.Instances
	}

	for _, k := range order {
		ch <- prometheus.MustNewConstMetric(c.perMember, prometheus.GaugeValue, float64(sums[k]), k.project, k.deployment, k.shape, k.member, k.state)
	}
}
