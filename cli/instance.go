package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instanceCommand is "lxd-deploy deployment shape instance": the instances of a shape,
// through the governor API, so that the shape's scaling bounds hold for people too.
func (a *app) instanceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances"},
		Short:   "Manage the instances of a shape",
		Long:    "Launch, delete, list and show the instances of a shape and change their state.\nLaunch and delete keep the shape within its scaling bounds.",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(
		a.instanceListCommand(),
		a.instanceShowCommand(),
		a.instanceLaunchCommand(),
		a.instanceDeleteCommand(),
		a.instanceLifecycleCommand(),
		a.instanceReportHealthCommand(),
	)

	for _, action := range instanceActions {
		cmd.AddCommand(a.instanceStateCommand(action))
	}

	return cmd
}

// instanceAction is a state change of an instance: the LXD action and how progress
// names it.
type instanceAction struct {
	name    string // LXD's action: start, stop, ...
	short   string // help text
	doing   string // progress while it runs: "Starting"
	done    string // final line: "started"
	timeout bool   // takes --force and --timeout (a clean shutdown is involved)
}

// instanceActions are the state commands, in the order help lists them.
var instanceActions = []instanceAction{
	{name: "start", short: "Start an instance", doing: "Starting", done: "started"},
	{name: "stop", short: "Stop an instance", doing: "Stopping", done: "stopped", timeout: true},
	{name: "restart", short: "Restart an instance", doing: "Restarting", done: "restarted", timeout: true},
	{name: "freeze", short: "Freeze (pause) an instance", doing: "Freezing", done: "frozen"},
	{name: "unfreeze", short: "Unfreeze (resume) an instance", doing: "Unfreezing", done: "unfrozen"},
}

// statePut is the request of a state change. lxc sends -1 (no limit) as the timeout of
// actions that take none; LXD reads it only for stop and restart.
func (action instanceAction) statePut(force bool, timeout int) lxdapi.InstanceStatePut {
	if !action.timeout {
		force, timeout = false, -1
	}

	return lxdapi.InstanceStatePut{Action: action.name, Force: force, Timeout: timeout}
}

// instanceTarget connects for "[<remote>:]<deployment> <shape> [<instance>]" and checks
// the names before anything is asked of the server. An empty instance is not checked.
func (a *app) instanceTarget(deploymentArg string, shape string, instance string) (*target, error) {
	if instance != "" {
		err := validate.Name("instance", instance)
		if err != nil {
			return nil, err
		}
	}

	return a.shapeTarget(deploymentArg, shape)
}

// instanceRows turns instances into list rows, sorted by name.
func instanceRows(instances []api.DeploymentInstance) [][]string {
	rows := make([][]string, 0, len(instances))
	for _, i := range instances {
		rows = append(rows, []string{i.Name, i.Status, i.State, createdAt(i.CreatedAt), shortFingerprint(i.TemplateHash), instanceLimits(i.Limits)})
	}

	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// createdAt shows a creation time the way "lxc list" does, in local time.
func createdAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}

	return t.Local().Format("2006/01/02 15:04 MST")
}

func (a *app) instanceListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment> <shape>",
		Aliases: []string{"ls"},
		Short:   "List the instances of a shape",
		Long:    "List the instances of a shape with LXD's status (Running, Stopped, ...), the state lxd-deployd\nrecorded (creating, created, deleting, missing) and the hash of the template each was created from.",
		Args:    exactArgs(2),
	}, func(args []string) (listing, error) {
		return a.shapeInstances(args, []string{"NAME", "STATUS", "STATE", "CREATED", "TEMPLATE", "LIMITS"}, instanceRows)
	})
}

// shapeInstances lists the instances of the shape args name ([<remote>:]<deployment>
// <shape>) with the given columns: "instance list" and "shape health" are two views of it.
func (a *app) shapeInstances(args []string, columns []string, rows func([]api.DeploymentInstance) [][]string) (listing, error) {
	t, err := a.instanceTarget(args[0], args[1], "")
	if err != nil {
		return listing{}, err
	}

	instances, err := t.server.GetDeploymentShapeInstances(t.name, args[1])
	return newListing(columns, instances, rows), err
}

func (a *app) instanceShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show [<remote>:]<deployment> <shape> <instance>",
		Short: "Show an instance, with LXD's live state",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.instanceTarget(args[0], args[1], args[2])
			if err != nil {
				return err
			}

			instance, err := t.server.GetDeploymentShapeInstance(t.name, args[1], args[2])
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, instance)
		},
	}
}

func (a *app) instanceLaunchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "launch [<remote>:]<deployment> <shape> <instance>",
		Short: "Create and start an instance of a shape",
		Long:  "Create and start an instance from the shape's instance template, and wait until it runs.\nA shape at its scaling maximum refuses the launch.",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.instanceTarget(args[0], args[1], args[2])
			if err != nil {
				return err
			}

			return a.waitOperation(cmd.Context(), "Launching "+args[2], "Instance "+args[2]+" launched", func() (*client.Operation, error) {
				return t.server.CreateDeploymentShapeInstance(t.name, args[1], args[2])
			})
		},
	}
}

func (a *app) instanceDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete [<remote>:]<deployment> <shape> <instance>",
		Aliases: []string{"rm"},
		Short:   "Stop and delete an instance of a shape",
		Long:    "Stop and delete an instance, and wait until it is gone.\nA shape at its scaling minimum refuses the delete.",
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.instanceTarget(args[0], args[1], args[2])
			if err != nil {
				return err
			}

			return a.waitOperation(cmd.Context(), "Deleting "+args[2], "Instance "+args[2]+" deleted", func() (*client.Operation, error) {
				return t.server.DeleteDeploymentShapeInstance(t.name, args[1], args[2])
			})
		},
	}
}

// instanceStateCommand is one of start, stop, restart, freeze and unfreeze.
func (a *app) instanceStateCommand(action instanceAction) *cobra.Command {
	var force bool
	var timeout int
	cmd := &cobra.Command{
		Use:   action.name + " [<remote>:]<deployment> <shape> <instance>",
		Short: action.short,
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.instanceTarget(args[0], args[1], args[2])
			if err != nil {
				return err
			}

			put := action.statePut(force, timeout)
			return a.waitOperation(cmd.Context(), action.doing+" "+args[2], "Instance "+args[2]+" "+action.done, func() (*client.Operation, error) {
				return t.server.UpdateDeploymentShapeInstanceState(t.name, args[1], args[2], put)
			})
		},
	}

	if action.timeout {
		cmd.Flags().BoolVarP(&force, "force", "f", false, "force the instance to stop (kill it) instead of a clean shutdown")
		cmd.Flags().IntVar(&timeout, "timeout", -1, "seconds to wait for a clean shutdown before failing (-1: no limit)")
	}

	return cmd
}

// waitOperation starts an operation, shows progress on stderr while it runs and waits for
// it. An error starting it (a bound check answering 409, say) is returned before any
// progress is shown; an operation that fails returns LXD's message.
func (a *app) waitOperation(ctx context.Context, doing string, done string, start func() (*client.Operation, error)) error {
	op, err := start()
	if err != nil {
		return explain(err)
	}

	if ctx == nil {
		ctx = context.Background()
	}

	p := newProgress(a.stderr, isTerminal(a.stderr))
	p.begin(doing)
	err = op.Wait(ctx)
	p.end(done, err)
	return err
}

// isTerminal reports whether w is a terminal, so that progress may redraw a line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// spinnerFrames are drawn in turn while an operation runs on a terminal.
const spinnerFrames = `|/-\`

// progress shows what a command waits for, as lxc does. On a terminal one line is redrawn
// with a spinner and the elapsed time and then replaced by the final line; otherwise (a
// log, a pipe) it writes plain lines only: what starts, then what is done.
type progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	now      func() time.Time

	started time.Time
	stop    chan struct{} // closed by end: the spinner stops drawing
	stopped chan struct{} // closed by the spinner once it drew its last frame
}

func newProgress(w io.Writer, tty bool) *progress {
	return &progress{w: w, tty: tty, interval: 100 * time.Millisecond, now: time.Now}
}

// begin shows that msg is under way.
func (p *progress) begin(msg string) {
	p.started = p.now()
	if !p.tty {
		fmt.Fprintln(p.w, msg)
		return
	}

	p.stop = make(chan struct{})
	p.stopped = make(chan struct{})
	go func() {
		defer close(p.stopped)
		ticker := time.NewTicker(p.interval)
		defer ticker.Stop()
		for frame := 0; ; frame++ {
			fmt.Fprint(p.w, "\r\033[K"+spinnerLine(frame, msg, p.now().Sub(p.started)))
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
		}
	}()
}

// end clears the spinner and, unless the operation failed (the error is then printed on
// its own), writes the final line.
func (p *progress) end(done string, err error) {
	if p.tty && p.stop != nil {
		close(p.stop)
		<-p.stopped
		p.stop = nil
		fmt.Fprint(p.w, "\r\033[K")
	}

	if err != nil {
		return
	}

	if p.tty {
		done += " (" + formatElapsed(p.now().Sub(p.started)) + ")"
	}

	fmt.Fprintln(p.w, done)
}

// spinnerLine is the line a terminal shows while msg runs: "/ Launching web1 (3s)".
func spinnerLine(frame int, msg string, elapsed time.Duration) string {
	return fmt.Sprintf("%c %s (%s)", spinnerFrames[frame%len(spinnerFrames)], msg, formatElapsed(elapsed))
}

// formatElapsed shows a duration in whole seconds, or tenths below ten seconds.
func formatElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}

	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}

	return d.Truncate(time.Second).String()
}
