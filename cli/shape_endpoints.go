package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// shapeEndpointsCommand is "lxd-deploy deployment shape endpoints": a shape's instances as
// its front door (or any load balancer following the API) sees them.
func (a *app) shapeEndpointsCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:   "endpoints [<remote>:]<deployment> <shape>",
		Short: "Show a shape's endpoints: each instance's address, port and traffic state",
		Long: "Show a shape's endpoints (a shape with a traffic object): each instance's address and\n" +
			"port, and whether it is serving (running, healthy, past min_ready, in no hook),\n" +
			"draining (leaving: it takes no new connections and is deleted once its open ones end\n" +
			"or the drain timeout passes) or not-ready. Any load balancer can follow the same list\n" +
			"on the API and its changes on /1.0/events?type=endpoints (doc/traffic.md).",
		Args: exactArgs(2),
	}, func(args []string) (listing, error) {
		t, err := a.shapeTarget(args[0], args[1])
		if err != nil {
			return listing{}, err
		}

		endpoints, err := t.server.GetDeploymentShapeEndpoints(t.name, args[1])
		if err != nil {
			return listing{}, err
		}

		return endpointsListing(endpoints), nil
	})
}

// endpointsListing is the table of a shape's endpoints, with a count per state as a note.
func endpointsListing(endpoints []api.DeploymentShapeEndpoint) listing {
	rows := make([][]string, 0, len(endpoints))
	counts := map[string]int{}
	for _, e := range endpoints {
		address := e.Address
		if address == "" {
			address = "-"
		}

		rows = append(rows, []string{e.Instance, address, strconv.Itoa(e.Port), e.State})
		counts[e.State]++
	}

	notes := []string{fmt.Sprintf("%d serving, %d draining, %d not ready", counts[api.EndpointServing], counts[api.EndpointDraining], counts[api.EndpointNotReady])}
	return listing{header: []string{"INSTANCE", "ADDRESS", "PORT", "STATE"}, rows: rows, data: endpoints, notes: notes}
}
