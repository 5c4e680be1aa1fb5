package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// clusterCommand is "lxd-deploy cluster", as "lxc cluster": members, join tokens, removal.
func (a *app) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Manage the cluster's members",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(a.clusterListCommand(), a.clusterShowCommand(), a.clusterAddCommand(), a.clusterRemoveCommand(),
		a.clusterListTokensCommand(), a.clusterRevokeTokenCommand(), a.clusterUpdateCertificateCommand(), a.clusterDrainMemberCommand())
	return cmd
}

// clusterMemberRows turns members into list rows.
func clusterMemberRows(members []api.ClusterMember) [][]string {
	rows := make([][]string, 0, len(members))
	for _, m := range members {
		role := m.DatabaseRole
		if m.DatabaseLeader {
			role += " (leader)"
		}

		rows = append(rows, []string{m.ServerName, m.URL, m.DatabaseAddress, role, m.Status, m.LastHeartbeat.Local().Format(time.DateTime)})
	}

	return rows
}

func (a *app) clusterListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]",
		Aliases: []string{"ls"},
		Short:   "List the cluster's members",
		Args:    rangeArgs(0, 1),
	}, func(args []string) (listing, error) {
		server, err := a.connectRemoteArg(args)
		if err != nil {
			return listing{}, err
		}

		members, err := server.GetClusterMembers()
		return newListing([]string{"NAME", "URL", "DATABASE ADDRESS", "DATABASE ROLE", "STATUS", "LAST HEARTBEAT"}, members, clusterMemberRows), err
	})
}

func (a *app) clusterShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show [<remote>:]<member>",
		Short: "Show a cluster member",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "cluster member")
			if err != nil {
				return err
			}

			member, err := t.server.GetClusterMember(t.name)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, member)
		},
	}
}

func (a *app) clusterAddCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add [<remote>:]<member>",
		Short: "Issue a join token for a new cluster member",
		Long: "Issue a single-use, expiring join token for a new member called <member>. Start the new\n" +
			"daemon with it: lxd-deployd --cluster-address <host:port> --cluster-join-token <token>\n" +
			"It fetches the cluster certificate from a member named in the token and joins; no files to copy.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "cluster member")
			if err != nil {
				return err
			}

			token, err := t.server.CreateClusterJoinToken(t.name)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Member %s join token (expires %s):\n%s\n", t.name, token.ExpiresAt.Local().Format(time.DateTime), token.Token)
			return err
		},
	}
}

func (a *app) clusterRemoveCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "remove [<remote>:]<member>",
		Aliases: []string{"rm"},
		Short:   "Remove a member from the cluster",
		Long: "Remove a member from the cluster. An online member hands its database role over first and\n" +
			"stops. A member that is offline for good needs --force. A database voter is removed only when an\n" +
			"online member can take its place.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "cluster member")
			if err != nil {
				return err
			}

			err = t.server.DeleteClusterMember(t.name, force)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Member %s removed from the cluster\n", t.name)
			return err
		},
	}

	cmd.Flags().BoolVar(&force, "force", false, "remove a member that is offline")
	return cmd
}
