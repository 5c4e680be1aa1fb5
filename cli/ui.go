package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// uiCommand is "lxd-deploy ui": the daemon's web view (doc/ui.md).
func (a *app) uiCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the daemon's web view",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(a.uiLinkCommand())
	return cmd
}

func (a *app) uiLinkCommand() *cobra.Command {
	var readOnly bool
	var expiry time.Duration
	var certificate string
	cmd := &cobra.Command{
		Use:   "link [<remote>:]",
		Short: "Print a single-use URL that signs a browser in to the web view",
		Long: `Print a single-use URL that signs a browser in to the web view, with no certificate to
import into the browser. The browser acts as a certificate of the trust store: the one
this command uses, or with --certificate (admins only) another one. Over the local unix
socket without --certificate it acts as the daemon's own entry for local admins
(lxd-deployd-web-local, made on first use, revocable like any entry). The session lasts
at most 12 hours and changes no credentials; --read-only makes one that sees everything
but secrets and changes nothing. At most 5 unused links per certificate, 20 an hour.`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, err := a.connectRemoteArg(args)
			if err != nil {
				return err
			}

			link, err := server.CreateUILink(api.UILinksPost{Certificate: certificate, ReadOnly: readOnly, Expiry: expiry.String()})
			if err != nil {
				return err
			}

			fmt.Fprintln(a.stdout, link.URL)
			mode := "read-write"
			if link.ReadOnly {
				mode = "read-only"
			}

			fmt.Fprintf(a.stderr, "Single use, %s, valid until %s, signs in as certificate %.12s\n", mode, link.ExpiresAt.Local().Format(time.DateTime), link.Certificate)
			return nil
		},
	}

	cmd.Flags().BoolVar(&readOnly, "read-only", false, "sign in with a session that cannot change anything")
	cmd.Flags().DurationVar(&expiry, "expiry", 10*time.Minute, "how long the link can be used (at most 24h)")
	cmd.Flags().StringVar(&certificate, "certificate", "", "fingerprint of the trust store entry the browser acts as (default: this client's, or on the unix socket the daemon's own)")
	return cmd
}
