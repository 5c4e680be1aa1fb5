package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// shapeRevisionCommand is "lxd-deploy deployment shape revision": a shape's history.
func (a *app) shapeRevisionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "revision",
		Aliases: []string{"revisions"},
		Short:   "Show the history of a shape: every change, its cause and who made it",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(a.revisionListCommand(), a.revisionShowCommand(), a.revisionDiffCommand())
	return cmd
}

// revisionNumber parses a revision argument.
func revisionNumber(arg string) (int, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("revision %q must be a number from 1 (see \"revision list\")", arg)
	}

	return n, nil
}

// revisionRows turns revisions into list rows, newest first.
func revisionRows(revisions []api.DeploymentShapeRevision) [][]string {
	rows := make([][]string, 0, len(revisions))
	for _, r := range revisions {
		rows = append(rows, []string{strconv.Itoa(r.Revision), r.Cause, r.Requestor.String(), createdAt(r.CreatedAt), strconv.Itoa(r.Instances), r.Notes})
	}

	return rows
}

func (a *app) revisionListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment> <shape>",
		Aliases: []string{"ls"},
		Short:   "List a shape's revisions, newest first",
		Args:    exactArgs(2),
	}, func(args []string) (listing, error) {
		t, err := a.shapeTarget(args[0], args[1])
		if err != nil {
			return listing{}, err
		}

		revisions, err := t.server.GetDeploymentShapeRevisions(t.name, args[1])
		return newListing([]string{"REVISION", "CAUSE", "BY", "CREATED AT", "INSTANCES", "NOTES"}, revisions, revisionRows), err
	})
}

func (a *app) revisionShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show [<remote>:]<deployment> <shape> <revision>",
		Short: "Show one revision: the shape's writable fields then, its cause and requestor",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := revisionNumber(args[2])
			if err != nil {
				return err
			}

			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			rev, err := t.server.GetDeploymentShapeRevision(t.name, args[1], n)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, rev)
		},
	}
}

func (a *app) revisionDiffCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "diff [<remote>:]<deployment> <shape> <from> [<to>]",
		Short: "Show the fields that changed from one revision to another (default: the latest)",
		Args:  rangeArgs(3, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := revisionNumber(args[2])
			if err != nil {
				return err
			}

			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			to := 0
			if len(args) == 4 {
				to, err = revisionNumber(args[3])
				if err != nil {
					return err
				}
			} else {
				shape, _, err := t.server.GetDeploymentShape(t.name, args[1])
				if err != nil {
					return err
				}

				to = shape.Revision
			}

			diff, err := t.server.GetDeploymentShapeRevisionDiff(t.name, args[1], to, from)
			if err != nil {
				return err
			}

			return writePlan(a.stdout, &api.DeploymentTemplatePlan{Update: []api.DeploymentShapeChange{{Name: fmt.Sprintf("%s (revision %d -> %d)", args[1], from, to), Changes: diff.Changes}}})
		},
	}
}

func (a *app) shapeRollbackCommand() *cobra.Command {
	var revision int
	var scaling, noTemplate, dryRun, rollout, noRollout bool
	var notes string
	cmd := &cobra.Command{
		Use:   "rollback [<remote>:]<deployment> <shape> [--revision N] [--scaling] [--notes TEXT] [--rollout|--no-rollout] [--dry-run]",
		Short: "Set a shape back to an earlier revision (a new revision)",
		Long: `Set a shape's instance template, config, description and rollout settings back to those of an
earlier revision (default: the one before the latest); --scaling restores the bounds too,
--no-template only the bounds. History moves forward: the rollback is a new revision.
The image the revision recorded is pinned in the template, so new instances and the
rollout use that exact image even if its alias names another one now; the shape's image
triggers are suspended until "shape triggers resume" (or "deployment triggers resume").
Running instances are replaced only by a rollout: --rollout starts one with the rollback
(the default when the shape's rollout triggers include config-change), --no-rollout never.
--dry-run shows the plan (changes, instances left outdated, the rollout) and changes nothing.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			if rollout && noRollout {
				return fmt.Errorf("--rollout and --no-rollout contradict each other: give one")
			}

			template := !noTemplate
			req := api.DeploymentShapeRollbackPost{Revision: revision, Template: &template, Scaling: scaling, Notes: notes}
			if rollout || noRollout {
				req.Rollout = &rollout
			}

			if dryRun {
				plan, err := t.server.DryRunRollbackDeploymentShape(t.name, args[1], req)
				if err != nil {
					return err
				}

				return a.writeRollbackPlan(args[1], plan)
			}

			result, err := t.server.RollbackDeploymentShape(t.name, args[1], req)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Shape %s is at revision %d: %s\n", args[1], result.Revision, result.Message)
			return err
		},
	}

	cmd.Flags().IntVar(&revision, "revision", 0, "the revision to go back to (default: the one before the latest)")
	cmd.Flags().BoolVar(&scaling, "scaling", false, "restore scaling_minimum and scaling_maximum too")
	cmd.Flags().BoolVar(&noTemplate, "no-template", false, "leave the template, config and description as they are (with --scaling)")
	cmd.Flags().StringVar(&notes, "notes", "", "why, recorded with the new revision")
	cmd.Flags().BoolVar(&rollout, "rollout", false, "start a rollout of the rollback")
	cmd.Flags().BoolVar(&noRollout, "no-rollout", false, "start no rollout, even with a config-change trigger")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the rollback would do, changing nothing")
	return cmd
}

// writeRollbackPlan prints a dry-run rollback's plan.
func (a *app) writeRollbackPlan(shape string, plan *api.DeploymentShapeRollback) error {
	_, err := fmt.Fprintf(a.stdout, "Shape %s would be at revision %d: %s\n", shape, plan.Revision, plan.Message)
	if err != nil {
		return err
	}

	err = writePlan(a.stdout, &api.DeploymentTemplatePlan{Update: []api.DeploymentShapeChange{{Name: fmt.Sprintf("%s (revision %d)", shape, plan.Revision), Changes: plan.Changes}}})
	if err != nil {
		return err
	}

	for _, name := range plan.Outdated {
		_, err = fmt.Fprintf(a.stdout, "  outdated: %s\n", name)
		if err != nil {
			return err
		}
	}

	return nil
}

// activityRows turns activity entries into list rows, oldest first.
func activityRows(entries []api.DeploymentActivity) [][]string {
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		change := ""
		if e.From != 0 || e.To != 0 {
			change = fmt.Sprintf("%d -> %d", e.From, e.To)
		}

		rows = append(rows, []string{strconv.FormatInt(e.ID, 10), e.Time.Local().Format("2006/01/02 15:04:05"), e.Shape, e.Action, change, e.Who, e.Why})
	}

	return rows
}

func (a *app) activityCommand() *cobra.Command {
	var shape string
	var since int64
	cmd := a.listCommand(&cobra.Command{
		Use:   "activity [<remote>:]<deployment> [--shape NAME] [--since ID]",
		Short: "Show why a deployment's shapes are as they are: scale changes, revisions, rollouts",
		Args:  exactArgs(1),
	}, a.inDeployment(func(t *target) (listing, error) {
		entries, err := t.server.GetDeploymentActivity(t.name, since, shape)
		return newListing([]string{"ID", "TIME", "SHAPE", "ACTION", "CHANGE", "WHO", "WHY"}, entries, activityRows), err
	}))

	cmd.Flags().StringVar(&shape, "shape", "", "only this shape's entries")
	cmd.Flags().Int64Var(&since, "since", 0, "only entries after this id")
	return cmd
}
