package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Join tokens and the cluster certificate, spelt as LXD's `lxc cluster list-tokens`,
// `revoke-token` and `update-certificate` (doc/security.md says when to use which).

// clusterTokenRows turns pending members into list rows.
func clusterTokenRows(pending []api.ClusterMember) [][]string {
	rows := make([][]string, 0, len(pending))
	for _, m := range pending {
		expires := ""
		if m.ExpiresAt != nil {
			expires = m.ExpiresAt.Local().Format(time.DateTime)
		}

		rows = append(rows, []string{m.ServerName, m.Status, expires})
	}

	return rows
}

func (a *app) clusterListTokensCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:   "list-tokens [<remote>:]",
		Short: "List the outstanding join tokens (members yet to join)",
		Long: "List the join tokens not yet spent: Pending until a daemon redeems one, Joining until that\n" +
			"daemon has joined (then the token is spent). Revoke one with `lxd-deploy cluster revoke-token`.",
		Args: rangeArgs(0, 1),
	}, func(args []string) (listing, error) {
		server, err := a.connectRemoteArg(args)
		if err != nil {
			return listing{}, err
		}

		pending, err := server.GetClusterJoinTokens()
		return newListing([]string{"NAME", "STATUS", "EXPIRES AT"}, pending, clusterTokenRows), err
	})
}

func (a *app) clusterRevokeTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke-token [<remote>:]<member>",
		Short: "Revoke the join token of a member yet to join",
		Long: "Revoke the outstanding join token issued for <member>: nobody can join with it any more.\n" +
			"A daemon that already redeemed it got the cluster certificate: rotate that with\n" +
			"`lxd-deploy cluster update-certificate`.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "cluster member")
			if err != nil {
				return err
			}

			err = t.server.RevokeClusterJoinToken(t.name)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Join token of member %s revoked\n", t.name)
			return err
		},
	}
}

func (a *app) clusterUpdateCertificateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "update-certificate [<remote>:]",
		Short: "Rotate the cluster certificate",
		Long: "Replace the cluster certificate (the database's TLS between members, and what join tokens\n" +
			"name) with a new one, without downtime: every member accepts the new one, then presents it,\n" +
			"then the old one is refused. Run it after removing a member or revoking a redeemed token.\n" +
			"Offline members hold the rotation until they come back or are removed.",
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, err := a.connectRemoteArg(args)
			if err != nil {
				return err
			}

			result, err := server.UpdateClusterCertificate()
			if err != nil {
				return err
			}

			if !result.Complete {
				_, err = fmt.Fprintf(a.stdout, "New cluster certificate %s; waiting for members to move to it: %s\n", result.Fingerprint[:12], strings.Join(result.Waiting, ", "))
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Cluster certificate rotated: every member presents %s, the old one is refused\n", result.Fingerprint[:12])
			return err
		},
	}
}
