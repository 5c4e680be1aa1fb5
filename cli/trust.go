package main

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"sort"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// configCommand is "lxd-deploy config": the server's configuration, for now its trust
// store, as in "lxc config trust".
func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage the server's configuration",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	trust := &cobra.Command{
		Use:   "trust",
		Short: "Manage the trust store (client and deployments certificates)",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	trust.AddCommand(
		a.trustListCommand(),
		a.trustAddCommand(),
		a.trustShowCommand(),
		a.trustRemoveCommand(),
	)

	cmd.AddCommand(trust)
	return cmd
}

// certificateRows turns certificates into list rows, sorted by name then fingerprint.
func certificateRows(certs []lxdapi.Certificate) [][]string {
	rows := make([][]string, 0, len(certs))
	for _, c := range certs {
		rows = append(rows, []string{c.Name, c.Type, shortFingerprint(c.Fingerprint)})
	}

	sort.Slice(rows, func(i, j int) bool {
		if rows[i][0] != rows[j][0] {
			return rows[i][0] < rows[j][0]
		}

		return rows[i][2] < rows[j][2]
	})

	return rows
}

func (a *app) trustListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]",
		Aliases: []string{"ls"},
		Short:   "List trusted certificates",
		Args:    rangeArgs(0, 1),
	}, func(args []string) (listing, error) {
		server, err := a.connectRemoteArg(args)
		if err != nil {
			return listing{}, err
		}

		certs, err := server.GetCertificates()
		return newListing([]string{"NAME", "TYPE", "FINGERPRINT"}, certs, certificateRows), err
	})
}

// trustAddArgs splits "[<remote>:] [<cert.crt>]": a lone argument ending in ':' is a
// remote, otherwise it is a certificate file.
func trustAddArgs(args []string) (remoteArg string, certFile string, err error) {
	switch len(args) {
	case 0:
		return "", "", nil
	case 1:
		if strings.HasSuffix(args[0], ":") {
			return args[0], "", nil
		}

		return "", args[0], nil
	default:
		if !strings.HasSuffix(args[0], ":") {
			return "", "", fmt.Errorf("%q: expected a remote followed by ':' before the certificate file", args[0])
		}

		return args[0], args[1], nil
	}
}

// readCertificate reads a PEM certificate file and returns it with its fingerprint.
func readCertificate(path string) (certPEM string, fingerprint string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("read certificate: %w", err)
	}

	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", "", fmt.Errorf("%s is not a PEM certificate (-----BEGIN CERTIFICATE-----)", path)
	}

	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", "", fmt.Errorf("%s is not a valid X.509 certificate: %w", path, err)
	}

	sum := sha256.Sum256(cert.Raw)
	return string(pem.EncodeToMemory(block)), hex.EncodeToString(sum[:]), nil
}

func (a *app) trustAddCommand() *cobra.Command {
	var name string
	var certType string
	cmd := &cobra.Command{
		Use:   "add [<remote>:] [<cert.crt>]",
		Short: "Add a certificate to the trust store, or issue a trust token",
		Long: "Add a certificate to the trust store. Without a certificate file, issue a single-use trust token\n" +
			"instead: the new client redeems it with \"lxd-deploy remote add <name> <token>\".\n\n" +
			"Type \"client\" may use the whole management API; type \"deployments\" (governors) may only act\n" +
			"through the deployment keys bound to it (\"lxd-deploy deployment key create\").",
		Args: rangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := validate.CertificateType(certType)
			if err != nil {
				return err
			}

			remoteArg, certFile, err := trustAddArgs(args)
			if err != nil {
				return err
			}

			if certFile == "" {
				return a.trustToken(remoteArg, name, certType)
			}

			certPEM, fingerprint, err := readCertificate(certFile)
			if err != nil {
				return err
			}

			server, err := a.connectRemoteArg(nonEmpty(remoteArg))
			if err != nil {
				return err
			}

			err = server.CreateCertificate(lxdapi.CertificatesPost{Name: name, Type: certType, Certificate: certPEM})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Certificate %s added to the trust store (type %s)\n", fingerprint, certType)
			return err
		},
	}

	cmd.Flags().StringVar(&name, "name", "", "name of the certificate (default: its common name); required for a token")
	cmd.Flags().StringVar(&certType, "type", api.CertificateTypeClient, "type of the certificate: client, deployments or metrics (reads /1.0/metrics only)")
	return cmd
}

// trustToken asks the server for a trust token and prints it the way lxc does.
func (a *app) trustToken(remoteArg string, name string, certType string) error {
	if name == "" {
		return fmt.Errorf("a trust token needs a client name: give --name NAME (or a certificate file to add)")
	}

	server, err := a.connectRemoteArg(nonEmpty(remoteArg))
	if err != nil {
		return err
	}

	token, err := server.CreateCertificateToken(name, certType)
	if err != nil {
		return err
	}

	_, err = fmt.Fprintf(a.stdout, "Client %s certificate add token:\n%s\n", name, token.Token)
	return err
}

func (a *app) trustShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show [<remote>:]<fingerprint>",
		Short: "Show a trusted certificate",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, fingerprint, err := a.connectFingerprint(args[0])
			if err != nil {
				return err
			}

			cert, _, err := server.GetCertificate(fingerprint)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, cert)
		},
	}
}

func (a *app) trustRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "remove [<remote>:]<fingerprint>",
		Aliases: []string{"rm"},
		Short:   "Remove a certificate from the trust store (and the deployment keys bound to it)",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, fingerprint, err := a.connectFingerprint(args[0])
			if err != nil {
				return err
			}

			err = server.DeleteCertificate(fingerprint)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Certificate %s removed from the trust store\n", fingerprint)
			return err
		},
	}
}

// connectFingerprint parses "[<remote>:]<fingerprint>", where the fingerprint may be a
// unique prefix (as list shows it), and connects.
func (a *app) connectFingerprint(arg string) (*client.Server, string, error) {
	c, err := a.loadConfig()
	if err != nil {
		return nil, "", err
	}

	remote, fingerprint, err := c.parseRemote(arg)
	if err != nil {
		return nil, "", err
	}

	fingerprint = strings.ToLower(fingerprint)
	if fingerprint == "" || strings.Trim(fingerprint, "0123456789abcdef") != "" {
		return nil, "", fmt.Errorf("%q is not a certificate fingerprint: give its hex digits (a unique prefix is enough)", fingerprint)
	}

	server, err := a.connect(c, remote)
	if err != nil {
		return nil, "", err
	}

	return server, fingerprint, nil
}

// nonEmpty returns the argument as a one-element list, or no list when it is empty.
func nonEmpty(arg string) []string {
	if arg == "" {
		return nil
	}

	return []string{arg}
}
