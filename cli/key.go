package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// keyCommand is "lxd-deploy deployment key": keys bind a trusted "deployments"
// certificate (a governor's) to a deployment with a role.
func (a *app) keyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "key",
		Aliases: []string{"keys"},
		Short:   "Manage deployment keys",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(
		a.keyListCommand(),
		a.keyShowCommand(),
		a.keyGetCommand(),
		a.keyCreateCommand(),
		a.keyEditCommand(),
		a.keyRenameCommand(),
		a.keyDeleteCommand(),
		a.keyTokenCommand(),
	)

	return cmd
}

// keyFields are the properties "key get" reads (keys have no config map).
func keyFields() configurable[api.DeploymentKey] {
	return configurable[api.DeploymentKey]{
		kind: "deployment key",
		properties: map[string]property[api.DeploymentKey]{
			"name":                    readOnly(func(k *api.DeploymentKey) string { return k.Name }),
			"description":             stringProperty(func(k *api.DeploymentKey) *string { return &k.Description }),
			"role":                    stringProperty(func(k *api.DeploymentKey) *string { return &k.Role }),
			"certificate_fingerprint": readOnly(func(k *api.DeploymentKey) string { return k.CertificateFingerprint }),
		},
	}
}

// keyRows turns keys into list rows, sorted by name.
func keyRows(keys []api.DeploymentKey) [][]string {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k.Name, k.Role, shortFingerprint(k.CertificateFingerprint), k.Description})
	}

	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// keyTarget connects for "[<remote>:]<deployment> <key>" and checks the key name.
func (a *app) keyTarget(deploymentArg string, key string) (*target, error) {
	err := validate.Name("key", key)
	if err != nil {
		return nil, err
	}

	return a.connectArg(deploymentArg, "deployment")
}

func (a *app) keyListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment>",
		Aliases: []string{"ls"},
		Short:   "List the keys of a deployment",
		Args:    exactArgs(1),
	}, a.inDeployment(func(t *target) (listing, error) {
		keys, err := t.server.GetDeploymentKeys(t.name)
		return newListing([]string{"NAME", "ROLE", "FINGERPRINT", "DESCRIPTION"}, keys, keyRows), err
	}))
}

// keyObject reaches a deployment key, "[<remote>:]<deployment> <key>", for show and get; keys
// are changed with edit only.
func (a *app) keyObject() object[api.DeploymentKey] {
	return object[api.DeploymentKey]{
		fields: keyFields(),
		names:  2,
		read: func(args []string) (*api.DeploymentKey, error) {
			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return nil, err
			}

			key, _, err := t.server.GetDeploymentKey(t.name, args[1])
			return key, err
		},
	}
}

func (a *app) keyShowCommand() *cobra.Command {
	return showCommand(a, a.keyObject(), &cobra.Command{
		Use:   "show [<remote>:]<deployment> <key>",
		Short: "Show a deployment key",
		Args:  exactArgs(2),
	})
}

func (a *app) keyGetCommand() *cobra.Command {
	return getCommand(a, a.keyObject(), &cobra.Command{
		Use:   "get [<remote>:]<deployment> <key> <property>",
		Short: "Get a deployment key property (name, description, role, certificate_fingerprint)",
		Args:  exactArgs(3),
	}, "accepted for symmetry with shapes and deployments: keys only have properties")
}

func (a *app) keyCreateCommand() *cobra.Command {
	var put api.DeploymentKeyPut
	cmd := &cobra.Command{
		Use:   "create [<remote>:]<deployment> <key> <certificate-fingerprint>",
		Short: "Create a deployment key bound to a trusted \"deployments\" certificate",
		Long: "Create a deployment key: it lets the holder of a certificate of type \"deployments\" in the trust store\n" +
			"(see \"lxd-deploy config trust add --type deployments\") act on this deployment with a role.",
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			fingerprint := strings.ToLower(args[2])
			err := validate.Fingerprint(fingerprint)
			if err != nil {
				return err
			}

			err = validate.Role(put.Role)
			if err != nil {
				return err
			}

			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return err
			}

			req := api.DeploymentKeysPost{
				DeploymentKeyPost:      api.DeploymentKeyPost{Name: args[1]},
				DeploymentKeyPut:       put,
				CertificateFingerprint: fingerprint,
			}

			err = t.server.CreateDeploymentKey(t.name, req)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment key %s created\n", args[1])
			return err
		},
	}

	cmd.Flags().StringVar(&put.Role, "role", api.DeploymentKeyRoleReadOnly, "role of the key: admin or read-only")
	cmd.Flags().StringVar(&put.Description, "description", "", "description of the key")
	return cmd
}

func (a *app) keyEditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "edit [<remote>:]<deployment> <key>",
		Short: "Edit a deployment key (description, role) as YAML",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return err
			}

			key, etag, err := t.server.GetDeploymentKey(t.name, args[1])
			if err != nil {
				return err
			}

			return a.editYAML("deployment key "+args[1], key.Writable(), func(data []byte) error {
				var edited api.DeploymentKey
				err := decodeYAML(data, &edited)
				if err != nil {
					return err
				}

				if edited.Role == "" {
					edited.Role = api.DeploymentKeyRoleReadOnly
				}

				err = validate.Role(edited.Role)
				if err != nil {
					return err
				}

				return t.server.UpdateDeploymentKey(t.name, args[1], edited.Writable(), etag)
			})
		},
	}
}

func (a *app) keyRenameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rename [<remote>:]<deployment> <key> <new-name>",
		Short: "Rename a deployment key",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := validate.Name("key", args[2])
			if err != nil {
				return err
			}

			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.RenameDeploymentKey(t.name, args[1], api.DeploymentKeyPost{Name: args[2]})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment key %s renamed to %s\n", args[1], args[2])
			return err
		},
	}
}

func (a *app) keyDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete [<remote>:]<deployment> <key>",
		Aliases: []string{"rm"},
		Short:   "Delete a deployment key, revoking its access",
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.keyTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.DeleteDeploymentKey(t.name, args[1])
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment key %s deleted\n", args[1])
			return err
		},
	}
}
