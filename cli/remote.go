package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// remoteCommand is "lxd-deploy remote": the daemons this client talks to.
func (a *app) remoteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "Manage the list of remote lxd-deployd daemons",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(
		a.remoteAddCommand(),
		a.remoteListCommand(),
		a.remoteRemoveCommand(),
		a.remoteRenameCommand(),
		a.remoteSwitchCommand(),
		a.remoteGetDefaultCommand(),
	)

	return cmd
}

// remoteEntry is a remote as list shows it in json and yaml.
type remoteEntry struct {
	Name    string `json:"name" yaml:"name"`
	Addr    string `json:"addr" yaml:"addr"`
	Default bool   `json:"default" yaml:"default"`
}

// remoteListing lists the remotes; the table marks the default one "(current)" as lxc
// does, and shows the local remote's actual socket.
func remoteListing(c *config) listing {
	l := listing{header: []string{"NAME", "URL"}}
	entries := []remoteEntry{}
	for _, name := range c.remoteNames() {
		addr := c.Remotes[name].Addr
		if strings.HasPrefix(addr, "unix:") {
			addr = "unix://" + socketPath(addr)
		}

		label := name
		if name == c.DefaultRemote {
			label += " (current)"
		}

		entries = append(entries, remoteEntry{Name: name, Addr: addr, Default: name == c.DefaultRemote})
		l.rows = append(l.rows, []string{label, addr})
	}

	l.data = entries
	return l
}

func (a *app) remoteListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the remotes",
		Args:    exactArgs(0),
	}, func(args []string) (listing, error) {
		c, err := a.loadConfig()
		if err != nil {
			return listing{}, err
		}

		return remoteListing(c), nil
	})
}

// removeRemote drops a remote from the configuration; local and the default remote stay.
func (c *config) removeRemote(name string) error {
	_, err := c.remote(name)
	if err != nil {
		return err
	}

	if name == localRemote {
		return fmt.Errorf("remote %q is the local daemon and cannot be removed", localRemote)
	}

	if name == c.DefaultRemote {
		return fmt.Errorf("remote %q is the default remote: switch to another one first (lxd-deploy remote switch %s)", name, localRemote)
	}

	delete(c.Remotes, name)
	return nil
}

// renameRemote renames a remote; the default remote follows.
func (c *config) renameRemote(name string, newName string) error {
	_, err := c.remote(name)
	if err != nil {
		return err
	}

	if name == localRemote {
		return fmt.Errorf("remote %q is the local daemon and cannot be renamed", localRemote)
	}

	err = validate.Name("remote", newName)
	if err != nil {
		return err
	}

	if _, exists := c.Remotes[newName]; exists {
		return fmt.Errorf("remote %q already exists", newName)
	}

	c.Remotes[newName] = c.Remotes[name]
	delete(c.Remotes, name)
	if c.DefaultRemote == name {
		c.DefaultRemote = newName
	}

	return nil
}

func (a *app) remoteRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "remove <name>",
		Aliases: []string{"rm"},
		Short:   "Remove a remote",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			err = c.removeRemote(args[0])
			if err != nil {
				return err
			}

			err = c.save()
			if err != nil {
				return err
			}

			err = os.Remove(c.serverCertPath(args[0]))
			if err != nil && !os.IsNotExist(err) {
				return err
			}

			return nil
		},
	}
}

func (a *app) remoteRenameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rename <name> <new-name>",
		Short: "Rename a remote",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			err = c.renameRemote(args[0], args[1])
			if err != nil {
				return err
			}

			err = os.Rename(c.serverCertPath(args[0]), c.serverCertPath(args[1]))
			if err != nil && !os.IsNotExist(err) {
				return err
			}

			return c.save()
		},
	}
}

func (a *app) remoteSwitchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "switch <name>",
		Short: "Make a remote the default one (used when an argument has no <remote>: prefix)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			_, err = c.remote(args[0])
			if err != nil {
				return err
			}

			c.DefaultRemote = args[0]
			return c.save()
		},
	}
}

func (a *app) remoteGetDefaultCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get-default",
		Short: "Show the default remote",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			_, err = fmt.Fprintln(a.stdout, c.DefaultRemote)
			return err
		},
	}
}
