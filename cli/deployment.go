package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// deploymentCommand is "lxd-deploy deployment": deployments, and their keys and shapes.
func (a *app) deploymentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "deployment",
		Aliases: []string{"deployments"},
		Short:   "Manage deployments",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(
		a.deploymentListCommand(),
		a.deploymentShowCommand(),
		a.deploymentGetCommand(),
		a.deploymentSetCommand(),
		a.deploymentUnsetCommand(),
		a.deploymentCreateCommand(),
		a.deploymentEditCommand(),
		a.deploymentRenameCommand(),
		a.deploymentDeleteCommand(),
		a.deploymentApplyCommand(), a.deploymentRollbackCommand(), a.manifestCommand(),
		a.keyCommand(),
		a.shapeCommand(),
		a.webhookCommand(),
		a.activityCommand(),
		a.deploymentTriggersCommand(),
		a.deploymentGovernorCommand(),
	)

	return cmd
}

// deploymentFields says what get, set and unset reach on a deployment.
func deploymentFields() configurable[api.Deployment] {
	return configurable[api.Deployment]{
		kind:   "deployment",
		config: func(d *api.Deployment) *map[string]string { return &d.Config },
		properties: map[string]property[api.Deployment]{
			"name":                 readOnly(func(d *api.Deployment) string { return d.Name }),
			"project":              readOnly(func(d *api.Deployment) string { return d.Project }),
			"description":          stringProperty(func(d *api.Deployment) *string { return &d.Description }),
			"governor_webhook_url": stringProperty(func(d *api.Deployment) *string { return &d.GovernorWebhookURL }),
		},
	}
}

// deploymentRows turns deployments into list rows, sorted by name.
func deploymentRows(deployments []api.Deployment) [][]string {
	rows := make([][]string, 0, len(deployments))
	for _, d := range deployments {
		shapes := sortedKeys(d.DeploymentShapes)
		rows = append(rows, []string{d.Name, d.Description, strings.Join(shapes, ", "), d.GovernorWebhookURL})
	}

	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// deploymentObject reaches a deployment, "[<remote>:]<deployment>", for show, get, set and unset.
func (a *app) deploymentObject() object[api.Deployment] {
	return object[api.Deployment]{
		fields: deploymentFields(),
		names:  1,
		read: func(args []string) (*api.Deployment, error) {
			_, deployment, _, err := a.readDeployment(args[0])
			return deployment, err
		},
		update: func(args []string, change func(d *api.Deployment) error) error {
			return a.updateDeployment(args[0], change)
		},
	}
}

func (a *app) deploymentShowCommand() *cobra.Command {
	return showCommand(a, a.deploymentObject(), &cobra.Command{
		Use:   "show [<remote>:]<deployment>",
		Short: "Show a deployment",
		Args:  exactArgs(1),
	})
}

func (a *app) deploymentGetCommand() *cobra.Command {
	return getCommand(a, a.deploymentObject(), &cobra.Command{
		Use:   "get [<remote>:]<deployment> <key>",
		Short: "Get a deployment config key, or with --property a property",
		Args:  exactArgs(2),
	}, "get a property (description, governor_webhook_url, ...) instead of a config key")
}

func (a *app) deploymentSetCommand() *cobra.Command {
	return setCommand(a.deploymentObject(), &cobra.Command{
		Use:   "set [<remote>:]<deployment> <key>=<value>...",
		Short: "Set deployment config keys, or with --property properties",
		Long:  "Set deployment config keys, or with --property the properties description and governor_webhook_url.\nAn empty value removes a config key.",
		Args:  rangeArgs(2, -1),
	}, "set properties (description, governor_webhook_url) instead of config keys")
}

func (a *app) deploymentUnsetCommand() *cobra.Command {
	return unsetCommand(a.deploymentObject(), &cobra.Command{
		Use:   "unset [<remote>:]<deployment> <key>...",
		Short: "Unset deployment config keys, or with --property properties",
		Args:  rangeArgs(2, -1),
	}, "unset properties (description, governor_webhook_url) instead of config keys")
}

// readDeployment connects for "[<remote>:]<deployment>" and reads the deployment with
// its ETag, which a write sends back so that a concurrent change is refused.
func (a *app) readDeployment(arg string) (*target, *api.Deployment, string, error) {
	t, err := a.connectArg(arg, "deployment")
	if err != nil {
		return nil, nil, "", err
	}

	deployment, etag, err := t.server.GetDeployment(t.name)
	if err != nil {
		return nil, nil, "", err
	}

	return t, deployment, etag, nil
}

// updateDeployment reads a deployment, changes it and writes it back with the ETag of the
// read, so that a concurrent change is refused rather than overwritten.
func (a *app) updateDeployment(arg string, change func(d *api.Deployment) error) error {
	t, deployment, etag, err := a.readDeployment(arg)
	if err != nil {
		return err
	}

	err = change(deployment)
	if err != nil {
		return err
	}

	err = validate.WebhookURL(deployment.GovernorWebhookURL)
	if err != nil {
		return err
	}

	return explain(t.server.UpdateDeployment(t.name, deployment.Writable(), etag))
}

func (a *app) deploymentCreateCommand() *cobra.Command {
	var req api.DeploymentsPost
	var configPath string
	cmd := &cobra.Command{
		Use:   "create [<remote>:]<deployment> [<key>=<value>...]",
		Short: "Create a deployment",
		Args:  rangeArgs(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pairs, err := parsePairs(args[1:])
			if err != nil {
				return err
			}

			req.Config, err = setConfig(nil, pairs)
			if err != nil {
				return err
			}

			err = validate.WebhookURL(req.GovernorWebhookURL)
			if err != nil {
				return err
			}

			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			req.Name = t.name
			if configPath != "" {
				req.Template, req.TemplateImports, err = a.templateRequest(configPath, &templateFlags{}, t.name, t.server.Project())
				if err != nil {
					return err
				}
			}

			err = t.server.CreateDeployment(req)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s created\n", t.name)
			return err
		},
	}

	cmd.Flags().StringVar(&req.Description, "description", "", "description of the deployment")
	cmd.Flags().StringVar(&req.GovernorWebhookURL, "webhook", "", "governor webhook URL (http:// or https://)")
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "templated config (YAML) whose shapes the deployment starts with (see \"deployment apply\")")
	return cmd
}

func (a *app) deploymentEditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "edit [<remote>:]<deployment>",
		Short: "Edit a deployment as YAML",
		Long:  "Edit a deployment's writable fields as YAML in $VISUAL or $EDITOR, or, when stdin is not a terminal,\nreplace them with the YAML read from stdin:\n\n  lxd-deploy deployment show dep1 > dep1.yaml; (edit it); lxd-deploy deployment edit dep1 < dep1.yaml",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, deployment, etag, err := a.readDeployment(args[0])
			if err != nil {
				return err
			}

			return a.editYAML("deployment "+t.name, deployment.Writable(), func(data []byte) error {
				var edited api.Deployment
				err := decodeYAML(data, &edited)
				if err != nil {
					return err
				}

				err = validate.Deployment(edited.Writable())
				if err != nil {
					return err
				}

				return t.server.UpdateDeployment(t.name, edited.Writable(), etag)
			})
		},
	}
}

func (a *app) deploymentRenameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rename [<remote>:]<deployment> <new-name>",
		Short: "Rename a deployment",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			newName, err := t.newName(args[1], "deployment")
			if err != nil {
				return err
			}

			err = t.server.RenameDeployment(t.name, api.DeploymentPost{Name: newName})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s renamed to %s\n", t.name, newName)
			return err
		},
	}
}

func (a *app) deploymentDeleteCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "delete [<remote>:]<deployment>",
		Aliases: []string{"rm"},
		Short:   "Delete a deployment",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			err = t.server.DeleteDeployment(t.name, force)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s deleted\n", t.name)
			return err
		},
	}

	cmd.Flags().BoolVar(&force, "force", false, "also delete the deployment's instances")
	return cmd
}
