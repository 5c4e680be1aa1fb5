package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
)

// keyTokenCommand is "lxd-deploy deployment key token": prints a short-lived governor token
// signed with the key pair of a deployment key, for scripts that call the governor API
// from inside an instance.
func (a *app) keyTokenCommand() *cobra.Command {
	var certFile, keyFile, subject string
	cmd := &cobra.Command{
		Use:   "token [<remote>:]<deployment> <key> --cert <file> --key <file>",
		Short: "Print a governor token signed with a deployment key's key pair",
		Long: `Print a governor token (JWT) for the deployment, signed with the private key of the
certificate the key binds, for scripts and tests of the in-instance governor transports.
It is valid for two minutes and for one request: governors send a fresh one with every
request (Authorization: Bearer <token>). The admin running this command reads the key
from the daemon first, so a wrong certificate is caught here.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return err
			}

			certPEM, err := os.ReadFile(certFile)
			if err != nil {
				return err
			}

			keyPEM, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}

			signer, err := client.NewTokenSigner(string(certPEM), string(keyPEM), t.server.Project(), t.name, subject)
			if err != nil {
				return err
			}

			key, _, err := t.server.GetDeploymentKey(t.name, args[1])
			if err != nil {
				return err
			}

			if key.CertificateFingerprint != signer.Fingerprint() {
				return fmt.Errorf("%s is not the certificate of key %q (%s): give the key's own certificate and private key", certFile, args[1], shortFingerprint(key.CertificateFingerprint))
			}

			token, err := signer.Token()
			if err != nil {
				return err
			}

			_, err = fmt.Fprintln(a.stdout, token)
			return err
		},
	}

	cmd.Flags().StringVar(&certFile, "cert", "", "certificate of the deployment key (PEM)")
	cmd.Flags().StringVar(&keyFile, "key", "", "private key of that certificate (PEM)")
	cmd.Flags().StringVar(&subject, "subject", "", "sub claim: the governor's instance name (informational)")
	_ = cmd.MarkFlagRequired("cert")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}
