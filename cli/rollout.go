package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// shapeRolloutCommand is "lxd-deploy deployment shape rollout": replacing a shape's
// outdated instances with instances of its latest revision.
func (a *app) shapeRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rollout",
		Aliases: []string{"rollouts"},
		Short:   "Replace a shape's outdated instances with its latest revision",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(a.rolloutStartCommand(), a.rolloutListCommand(), a.rolloutStatusCommand())
	for _, action := range []struct{ name, short string }{
		{"pause", "Pause a running rollout: nothing more is replaced until resume"},
		{"resume", "Resume a paused rollout"},
		{"cancel", "Stop a rollout: instances replaced so far stay, the others are left outdated"},
		{"promote", "Let a canary rollout whose canaries are ready replace the rest"},
		{"abort", "Revert a canary rollout's canaries to the revision it started from"},
	} {
		cmd.AddCommand(a.rolloutActionCommand(action.name, action.short))
	}

	return cmd
}

func (a *app) rolloutStartCommand() *cobra.Command {
	var notes string
	var detach bool
	cmd := &cobra.Command{
		Use:   "start [<remote>:]<deployment> <shape> [--notes TEXT]",
		Short: "Start a rollout of the shape's latest revision and follow it",
		Long: `Start a rollout of the shape's latest revision with the shape's rollout settings (strategy,
max_surge, max_unavailable, ...), and follow it until it ends; it exits non-zero when the
rollout fails or is cancelled. With --detach it returns once the rollout started: the
rollout goes on in the daemon (and survives its restart) either way.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			op, err := t.server.CreateDeploymentShapeRollout(t.name, args[1], api.DeploymentRolloutsPost{Notes: notes})
			if err != nil {
				return explain(err)
			}

			number := 0
			if n, ok := op.Metadata["rollout"].(float64); ok {
				number = int(n)
			}

			if number == 0 {
				rollouts, err := t.server.GetDeploymentShapeRollouts(t.name, args[1])
				if err != nil || len(rollouts) == 0 {
					return fmt.Errorf("the rollout started but cannot be read back: %v", err)
				}

				number = rollouts[0].Number
			}

			fmt.Fprintf(a.stdout, "Rollout %d of shape %s started\n", number, args[1])
			if detach {
				return nil
			}

			return a.watchRollout(cmd.Context(), t.server, t.name, args[1], number)
		},
	}

	cmd.Flags().StringVar(&notes, "notes", "", "why, recorded with the rollout")
	cmd.Flags().BoolVar(&detach, "detach", false, "return once the rollout started")
	return cmd
}

// rolloutRows turns rollouts into list rows, newest first.
func rolloutRows(rollouts []api.DeploymentRollout) [][]string {
	rows := make([][]string, 0, len(rollouts))
	for _, r := range rollouts {
		strategy := r.Strategy.Strategy
		if strategy == "" {
			strategy = api.RolloutRolling
		}

		progress := ""
		if !r.Finished() {
			progress = fmt.Sprintf("%d/%d updated, %d ready", r.Updated, r.Updated+r.Outdated, r.Ready)
		}

		rows = append(rows, []string{strconv.Itoa(r.Number), r.Status, r.Phase, fmt.Sprintf("%d -> %d", r.FromRevision, r.Revision), strategy, progress, r.Cause, createdAt(r.CreatedAt), r.Reason})
	}

	return rows
}

func (a *app) rolloutListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment> <shape>",
		Aliases: []string{"ls"},
		Short:   "List a shape's rollouts, newest first",
		Args:    exactArgs(2),
	}, func(args []string) (listing, error) {
		t, err := a.shapeTarget(args[0], args[1])
		if err != nil {
			return listing{}, err
		}

		rollouts, err := t.server.GetDeploymentShapeRollouts(t.name, args[1])
		return newListing([]string{"ROLLOUT", "STATUS", "PHASE", "REVISIONS", "STRATEGY", "PROGRESS", "CAUSE", "CREATED AT", "REASON"}, rollouts, rolloutRows), err
	})
}

// rolloutTarget connects to the deployment of args ([<remote>:]<deployment> <shape>
// [<rollout>]) and returns the rollout the optional third argument names, or the shape's
// newest.
func (a *app) rolloutTarget(args []string) (*target, int, error) {
	t, err := a.shapeTarget(args[0], args[1])
	if err != nil {
		return nil, 0, err
	}

	if len(args) > 2 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			return nil, 0, fmt.Errorf("rollout %q must be a number from 1 (see \"rollout list\")", args[2])
		}

		return t, n, nil
	}

	rollouts, err := t.server.GetDeploymentShapeRollouts(t.name, args[1])
	if err != nil {
		return nil, 0, err
	}

	if len(rollouts) == 0 {
		return nil, 0, fmt.Errorf("shape %s has no rollout yet: start one with \"shape rollout start\"", args[1])
	}

	return t, rollouts[0].Number, nil
}

func (a *app) rolloutStatusCommand() *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "status [<remote>:]<deployment> <shape> [<rollout>] [--watch]",
		Short: "Show a rollout (default: the newest); --watch follows it and fails when it does",
		Long: `Show a rollout's status and progress (default: the shape's newest rollout). With --watch it
shows a progress bar until the rollout ends and exits non-zero unless it completed, so a
CI pipeline can wait on it (as "kubectl rollout status").`,
		Args: rangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, n, err := a.rolloutTarget(args)
			if err != nil {
				return err
			}

			if watch {
				return a.watchRollout(cmd.Context(), t.server, t.name, args[1], n)
			}

			r, err := t.server.GetDeploymentShapeRollout(t.name, args[1], n)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, r)
		},
	}

	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the rollout until it ends; exit non-zero unless it completes")
	return cmd
}

// watchRollout shows a rollout's progress until it ends: a redrawn bar on a terminal, one
// line per change otherwise. Anything but complete is an error.
func (a *app) watchRollout(ctx context.Context, server *client.Server, deployment string, shape string, number int) error {
	if ctx == nil {
		ctx = context.Background()
	}

	tty := isTerminal(a.stdout)
	last := ""
	for {
		r, err := server.GetDeploymentShapeRollout(deployment, shape, number)
		if err != nil {
			return err
		}

		line := rolloutLine(r)
		if line != last {
			writeProgressLine(a.stdout, line, tty)
			last = line
		}

		if r.Finished() {
			if tty {
				fmt.Fprintln(a.stdout)
			}

			if r.Status == api.RolloutComplete {
				return nil
			}

			return fmt.Errorf("rollout %d %s: %s", number, r.Status, r.Reason)
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// rolloutLine draws a rollout's progress: "[#####-----] 2/4 updated, 1 ready, replace (running)".
func rolloutLine(r *api.DeploymentRollout) string {
	total := r.Updated + r.Outdated
	const width = 20
	filled := 0
	if total > 0 {
		filled = r.Ready * width / total
	}

	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	return fmt.Sprintf("[%s] %d/%d updated, %d ready, revision %d, %s (%s)", bar, r.Updated, total, r.Ready, r.Revision, r.Phase, r.Status)
}

func writeProgressLine(w io.Writer, line string, tty bool) {
	if tty {
		fmt.Fprint(w, "\r\033[K"+line)
		return
	}

	fmt.Fprintln(w, line)
}

func (a *app) rolloutActionCommand(action string, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " [<remote>:]<deployment> <shape> [<rollout>]",
		Short: short + " (default: the newest rollout)",
		Args:  rangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, n, err := a.rolloutTarget(args)
			if err != nil {
				return err
			}

			err = t.server.DeploymentShapeRolloutAction(t.name, args[1], n, action)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Rollout %d of shape %s: %s\n", n, args[1], action)
			return err
		},
	}
}

// rolloutProperties are the shape's rollout settings as properties of get, set and unset
// (lxd-deploy deployment shape set dep1 web rollout.strategy=canary -p), and its latest
// revision; the daemon checks the values.
func rolloutProperties() map[string]property[api.DeploymentShape] {
	rollout := func(s *api.DeploymentShape) *api.DeploymentShapeRollout { return &s.Rollout }
	count := func(field func(r *api.DeploymentShapeRollout) *api.RolloutCount) property[api.DeploymentShape] {
		return property[api.DeploymentShape]{
			get: func(s *api.DeploymentShape) string { return string(*field(rollout(s))) },
			set: func(s *api.DeploymentShape, value string) error {
				*field(rollout(s)) = api.RolloutCount(value)
				return nil
			},
		}
	}

	return map[string]property[api.DeploymentShape]{
		"revision":                  readOnly(func(s *api.DeploymentShape) string { return strconv.Itoa(s.Revision) }),
		"rollout.strategy":          stringProperty(func(s *api.DeploymentShape) *string { return &s.Rollout.Strategy }),
		"rollout.trigger":           stringProperty(func(s *api.DeploymentShape) *string { return &s.Rollout.Trigger }),
		"rollout.min_ready":         stringProperty(func(s *api.DeploymentShape) *string { return &s.Rollout.MinReady }),
		"rollout.progress_deadline": stringProperty(func(s *api.DeploymentShape) *string { return &s.Rollout.ProgressDeadline }),
		"rollout.max_surge":         count(func(r *api.DeploymentShapeRollout) *api.RolloutCount { return &r.MaxSurge }),
		"rollout.max_unavailable":   count(func(r *api.DeploymentShapeRollout) *api.RolloutCount { return &r.MaxUnavailable }),
		"rollout.auto_revert": {
			get: func(s *api.DeploymentShape) string { return strconv.FormatBool(s.Rollout.AutoRevert) },
			set: func(s *api.DeploymentShape, value string) error {
				if value == "" {
					s.Rollout.AutoRevert = false
					return nil
				}

				b, err := strconv.ParseBool(value)
				if err != nil {
					return fmt.Errorf("rollout.auto_revert must be true or false, got %q", value)
				}

				s.Rollout.AutoRevert = b
				return nil
			},
		},
		"rollout.canary.count": {
			get: func(s *api.DeploymentShape) string {
				if s.Rollout.Canary == nil {
					return ""
				}

				return strconv.Itoa(s.Rollout.Canary.Count)
			},
			set: func(s *api.DeploymentShape, value string) error {
				if value == "" {
					s.Rollout.Canary = nil
					return nil
				}

				n, err := strconv.Atoi(value)
				if err != nil {
					return fmt.Errorf("rollout.canary.count must be a whole number, got %q", value)
				}

				s.Rollout.Canary = &api.DeploymentShapeRolloutCanary{Count: n}
				return nil
			},
		},
	}
}
