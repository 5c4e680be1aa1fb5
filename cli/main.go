// Command lxd-deploy is the command line client of lxd-deployd: it manages deployments,
// their shapes and keys, the trust store, and the remotes it talks to, in the look and
// feel of lxc.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
	"github.com/lxd-deployd/lxd-deployd/shared/version"
)

func main() {
	// Template expansion re-executes this binary as a limited child (see isolate).
	isolate.MaybeChild()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	err := a.command().Execute()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", errorText(err))
		os.Exit(1)
	}
}

// app holds the global flags and the streams every command writes to. It is built once in
// main and handed to each noun's command builder, instead of living in globals.
type app struct {
	project string
	debug   bool

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	logger *slog.Logger
}

// command builds the whole command tree.
func (a *app) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "lxd-deploy",
		Short:         "Command line client for lxd-deployd",
		Long:          "lxd-deploy manages deployments, their shapes and keys, and the trust store of lxd-deployd daemons,\nlocal (unix socket) or remote (HTTPS, added with \"lxd-deploy remote add\").",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: true,
		},
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			level := slog.LevelWarn
			if a.debug {
				level = slog.LevelDebug
			}

			a.logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
		},
	}

	cmd.SetIn(a.stdin)
	cmd.SetOut(a.stdout)
	cmd.SetErr(a.stderr)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %q)", err, c.CommandPath()+" --help")
	})

	flags := cmd.PersistentFlags()
	flags.StringVar(&a.project, "project", api.DefaultProject, "LXD project the deployments belong to")
	flags.BoolVar(&a.debug, "debug", false, "show which remote and address each command talks to")

	cmd.AddCommand(
		a.deploymentCommand(),
		a.configCommand(),
		a.remoteCommand(),
		a.clusterCommand(),
		a.governorCommand(),
		a.expandCommand(), a.deployCommand(), a.registryCommand(),
		a.monitorCommand(),
		a.uiCommand(),
	)

	return cmd
}

// log returns the logger set up from --debug (a silent one before flags are parsed).
func (a *app) log() *slog.Logger {
	if a.logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	return a.logger
}

// showHelp runs a command group given no subcommand; with an unknown one, cobra.NoArgs
// has already answered "unknown command".
func showHelp(cmd *cobra.Command, args []string) error {
	return cmd.Help()
}

// exactArgs is cobra.ExactArgs with a message that shows the usage line.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError(cmd, args)
		}

		return nil
	}
}

// rangeArgs is cobra.RangeArgs with a message that shows the usage line.
func rangeArgs(minimum int, maximum int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minimum || (maximum >= 0 && len(args) > maximum) {
			return usageError(cmd, args)
		}

		return nil
	}
}

func usageError(cmd *cobra.Command, args []string) error {
	what := "missing arguments"
	if len(args) > 0 {
		what = "wrong number of arguments"
	}

	return fmt.Errorf("%s: usage: %s", what, cmd.UseLine())
}

// errorText is how an error is printed: an error with several problems (a config's schema
// violations, locally or from the daemon) lists them one per line.
func errorText(err error) string {
	var detailed interface {
		error
		Detail() string
	}

	// Only when nothing wrapped it with more words, which Detail would drop.
	if errors.As(err, &detailed) && detailed.Error() == err.Error() {
		return detailed.Detail()
	}

	return err.Error()
}
