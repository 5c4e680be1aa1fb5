package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// instanceLifecycleCommand is "shape instance lifecycle continue|abandon|heartbeat": it ends
// or extends an instance's launching:wait or terminating:wait.
func (a *app) instanceLifecycleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lifecycle",
		Short: "End or extend an instance's lifecycle hook wait",
		Long:  "An instance of a shape with hooks waits in launching:wait after its launch and in terminating:wait\nafter its delete, until continue, abandon, or its timeout (heartbeat restarts the timeout).",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	for _, action := range []struct{ name, short, done string }{
		{api.LifecycleActionContinue, "Let the instance go on (ready after a launch, deleted after a drain)", "continues"},
		{api.LifecycleActionAbandon, "Abandon the wait (a launch is undone, a delete is cancelled)", "abandoned its wait"},
		{api.LifecycleActionHeartbeat, "Restart the wait's timeout", "waits longer"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   action.name + " [<remote>:]<deployment> <shape> <instance>",
			Short: action.short,
			Args:  exactArgs(3),
			RunE: func(cmd *cobra.Command, args []string) error {
				t, err := a.instanceTarget(args[0], args[1], args[2])
				if err != nil {
					return err
				}

				err = t.server.DeploymentShapeInstanceLifecycle(t.name, args[1], args[2], action.name)
				if err != nil {
					return err
				}

				_, err = fmt.Fprintf(a.stdout, "Instance %s %s\n", args[2], action.done)
				return err
			},
		})
	}

	return cmd
}

// shapeHealthCommand is "shape health": the last health check of each instance.
func (a *app) shapeHealthCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:   "health [<remote>:]<deployment> <shape>",
		Short: "Show the last health check of each instance of a shape",
		Args:  exactArgs(2),
	}, func(args []string) (listing, error) {
		l, err := a.shapeInstances(args, []string{"NAME", "HEALTH", "CHECKED", "OUTPUT", "LIFECYCLE"}, healthRows)
		if err != nil {
			return l, err
		}

		t, err := a.instanceTarget(args[0], args[1], "")
		if err != nil {
			return l, err
		}

		shape, _, err := t.server.GetDeploymentShape(t.name, args[1])
		if err == nil {
			l.notes = healthNotes(shape.HealthStatus)
		}

		return l, err
	})
}

// healthNotes says, under the table, what is wrong with the check or autohealing as a
// whole: nothing when the check works and autohealing acts.
func healthNotes(status *api.DeploymentShapeHealthStatus) []string {
	if status == nil {
		return nil
	}

	var notes []string
	if status.Check == api.HealthCheckBroken {
		notes = append(notes, "Check: broken: "+status.CheckReason)
	}

	if status.Autohealing == api.AutohealingHeld {
		since := ""
		if status.Since != nil {
			since = " since " + status.Since.Local().Format("2006/01/02 15:04:05 MST")
		}

		notes = append(notes, "Autohealing: held"+since+": "+status.AutohealingReason)
	}

	return notes
}

func healthRows(instances []api.DeploymentInstance) [][]string {
	rows := make([][]string, 0, len(instances))
	for _, i := range instances {
		checked, output := "", ""
		if i.HealthCheck != nil && i.HealthCheck.CheckedAt != nil {
			checked, output = i.HealthCheck.CheckedAt.Local().Format("2006/01/02 15:04:05 MST"), i.HealthCheck.Output
		}

		if len(output) > 60 {
			output = output[:60] + "..."
		}

		verdict := i.Health
		if i.HealthCheck != nil && i.HealthCheck.Stale {
			// The verdict is the last check's that ran; the latest could not run.
			verdict += " (stale)"
			output = "latest check did not run: " + i.HealthCheck.StaleReason
			if len(output) > 60 {
				output = output[:60] + "..."
			}
		}

		rows = append(rows, []string{i.Name, verdict, checked, output, i.Lifecycle})
	}

	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// shapeWarmPoolCommand is "shape warm-pool show": the instances kept stopped for launches.
func (a *app) shapeWarmPoolCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "warm-pool",
		Short: "Show a shape's warm pool",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(a.listCommand(&cobra.Command{
		Use:   "show [<remote>:]<deployment> <shape>",
		Short: "List the stopped instances a launch of the shape takes first",
		Args:  exactArgs(2),
	}, func(args []string) (listing, error) {
		t, err := a.instanceTarget(args[0], args[1], "")
		if err != nil {
			return listing{}, err
		}

		pool, err := t.server.GetDeploymentShapeWarmPool(t.name, args[1])
		return newListing([]string{"NAME", "STATE", "CREATED", "TEMPLATE"}, pool, func(pool []api.DeploymentShapeWarmPoolInstance) [][]string {
			rows := make([][]string, 0, len(pool))
			for _, p := range pool {
				rows = append(rows, []string{p.Name, p.State, createdAt(p.CreatedAt), shortFingerprint(p.TemplateHash)})
			}

			return rows
		}), err
	}))

	return cmd
}
