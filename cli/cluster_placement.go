package main

import (
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
)

// clusterDrainMemberCommand is "lxd-deploy cluster drain-member": every managed instance
// leaves an LXD cluster member before an operator evacuates it (doc/placement.md).
func (a *app) clusterDrainMemberCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drain-member [<remote>:]<lxd-member>",
		Short: "Move every managed instance off an LXD cluster member",
		Long: "Move every instance of every shape off an LXD cluster member (not an lxd-deployd member),\n" +
			"one at a time and shape by shape, within each shape's bounds and health.max_unavailable: the\n" +
			"replacement is made on another member first where the maximum leaves room, the old instance\n" +
			"deleted first where it does not. Run it before `lxc cluster evacuate`.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "LXD member")
			if err != nil {
				return err
			}

			return a.waitOperation(cmd.Context(), "Draining LXD member "+t.name, "LXD member "+t.name+" drained", func() (*client.Operation, error) {
				return t.server.DrainLXDMember(t.name)
			})
		},
	}
}

// shapeRebalanceCommand is "lxd-deploy deployment shape rebalance".
func (a *app) shapeRebalanceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rebalance [<remote>:]<deployment> <shape>",
		Short: "Restore a shape's spread over its placement's members or groups",
		Long: "Move instances one at a time from the fullest member (or group) to the emptiest until no two\n" +
			"differ by more than one, within the shape's bounds and health.max_unavailable (doc/placement.md).",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			return a.waitOperation(cmd.Context(), "Rebalancing shape "+args[1], "Shape "+args[1]+" rebalanced", func() (*client.Operation, error) {
				return t.server.RebalanceDeploymentShape(t.name, args[1])
			})
		},
	}
}
