package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// deploymentTriggersCommand is "deployment triggers suspend|resume": the deployment's kill
// switch for every trigger of every shape (doc/rollouts.md#suspended-triggers).
func (a *app) deploymentTriggersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "triggers",
		Short: "Suspend or resume every rollout trigger of a deployment",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	for _, action := range []struct{ name, short string }{
		{"suspend", "Suspend every trigger of a deployment's shapes (the kill switch)"},
		{"resume", "Resume a deployment's triggers, and every shape's a rollback suspended"},
	} {
		var notes string
		sub := &cobra.Command{
			Use:   action.name + " [<remote>:]<deployment> [--notes TEXT]",
			Short: action.short,
			Args:  exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				t, err := a.connectArg(args[0], "deployment")
				if err != nil {
					return err
				}

				req := api.DeploymentTriggersPost{Notes: notes}
				if action.name == "suspend" {
					err = t.server.SuspendDeploymentTriggers(t.name, req)
				} else {
					err = t.server.ResumeDeploymentTriggers(t.name, req)
				}

				if err != nil {
					return err
				}

				_, err = fmt.Fprintf(a.stdout, "Triggers of deployment %s %sd\n", t.name, action.name)
				return err
			},
		}

		sub.Flags().StringVar(&notes, "notes", "", "why, recorded in the activity log")
		cmd.AddCommand(sub)
	}

	return cmd
}

// shapeTriggersCommand is "deployment shape triggers resume": one shape's triggers that a
// rollback suspended.
func (a *app) shapeTriggersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "triggers",
		Short: "Resume a shape's rollout triggers after a rollback",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	var notes string
	resume := &cobra.Command{
		Use:   "resume [<remote>:]<deployment> <shape> [--notes TEXT]",
		Short: "Resume the triggers a rollback suspended (and follow the image alias again)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.ResumeDeploymentShapeTriggers(t.name, args[1], api.DeploymentTriggersPost{Notes: notes})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Triggers of shape %s resumed\n", args[1])
			return err
		},
	}

	resume.Flags().StringVar(&notes, "notes", "", "why, recorded in the activity log")
	cmd.AddCommand(resume)
	return cmd
}
