package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
)

// templateRequest reads --config for a deployment (deployment create --config): the config
// and its files, fetched templates included.
func (a *app) templateRequest(configPath string, flags *templateFlags, deployment string, project string) (string, map[string]string, error) {
	local, err := a.loadTemplate(configPath, flags, templates.Env{Deployment: deployment, Project: project})
	if err != nil {
		return "", nil, err
	}

	return string(local.config), stringImports(local.imports), nil
}

// latestManifest returns the name of a deployment's latest manifest, for messages.
func latestManifest(server *client.Server, deployment string) string {
	names, err := server.GetDeploymentManifestNames(deployment)
	if err != nil || len(names) == 0 {
		return ""
	}

	return names[len(names)-1]
}

// asManifest says " as <manifest>" for the latest manifest of a deployment, or nothing.
func asManifest(server *client.Server, deployment string) string {
	name := latestManifest(server, deployment)
	if name == "" {
		return ""
	}

	return " as " + name
}

func (a *app) deploymentApplyCommand() *cobra.Command {
	var flags templateFlags
	var configPath string
	var diff, force bool
	cmd := &cobra.Command{
		Use:   "apply [<remote>:]<deployment> --config <config.yaml>",
		Short: "Apply a templated config to a deployment's shapes",
		Long: `Apply a templated config to a deployment: its expanded shapes are created, updated or deleted
to match, and the config is recorded as a new manifest. Instances keep running: a changed
instance template applies to new instances, and sizes stay the governor's. A shape an
earlier manifest made that the config drops is deleted; while it has instances that is an
error unless --force, which deletes them. Shapes no manifest made are left alone.

With --diff, nothing changes: the daemon shows what applying would do.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, deployment, etag, err := a.readDeployment(args[0])
			if err != nil {
				return err
			}

			put := deployment.Writable()
			put.Template, put.TemplateImports, err = a.templateRequest(configPath, &flags, t.name, t.server.Project())
			if err != nil {
				return err
			}

			plan, err := t.server.ApplyDeploymentTemplate(t.name, put, etag, client.ApplyOptions{Force: force, DryRun: diff})
			if err != nil {
				return explain(err)
			}

			if diff {
				return writePlan(a.stdout, plan)
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s applied%s\n", t.name, asManifest(t.server, t.name))
			return err
		},
	}

	flags.add(cmd)
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "the templated config (YAML); the files it needs are read next to it")
	cmd.Flags().BoolVar(&diff, "diff", false, "show what would change, and change nothing")
	cmd.Flags().BoolVar(&force, "force", false, "delete the instances of shapes the config drops")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func (a *app) deploymentRollbackCommand() *cobra.Command {
	var diff, force bool
	cmd := &cobra.Command{
		Use:   "rollback [<remote>:]<deployment> <manifest>",
		Short: "Apply an earlier manifest's config again",
		Long: `Apply the config of an earlier manifest again (as "apply" would), recorded as a new manifest
whose cause names the earlier one. The deployment's description, config and webhook are
not rolled back.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			applied, plan, err := t.server.RollbackDeployment(t.name, args[1], client.ApplyOptions{Force: force, DryRun: diff})
			if err != nil {
				return err
			}

			if diff {
				return writePlan(a.stdout, plan)
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s rolled back to %s (%s)\n", t.name, args[1], applied.Name)
			return err
		},
	}

	cmd.Flags().BoolVar(&diff, "diff", false, "show what would change, and change nothing")
	cmd.Flags().BoolVar(&force, "force", false, "delete the instances of shapes the earlier config does not have")
	return cmd
}

func (a *app) manifestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "manifest",
		Aliases: []string{"manifests"},
		Short:   "Show the templated configs applied to a deployment",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(a.manifestListCommand(), a.manifestShowCommand())
	return cmd
}

// manifestRows turns manifests into list rows, oldest first.
func manifestRows(manifests []api.DeploymentManifest) [][]string {
	rows := make([][]string, 0, len(manifests))
	for _, m := range manifests {
		rows = append(rows, []string{m.Name, m.Cause, createdAt(m.CreatedAt), strconv.Itoa(len(m.ExpandedConfig.Resources))})
	}

	return rows
}

func (a *app) manifestListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment>",
		Aliases: []string{"ls"},
		Short:   "List a deployment's manifests, oldest first",
		Args:    exactArgs(1),
	}, a.inDeployment(func(t *target) (listing, error) {
		manifests, err := t.server.GetDeploymentManifests(t.name)
		return newListing([]string{"NAME", "CAUSE", "CREATED AT", "SHAPES"}, manifests, manifestRows), err
	}))
}

func (a *app) manifestShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show [<remote>:]<deployment> [<manifest>]",
		Short: "Show a manifest (default: the latest)",
		Args:  rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			name := ""
			if len(args) == 2 {
				name = args[1]
			} else {
				name = latestManifest(t.server, t.name)
				if name == "" {
					return fmt.Errorf("deployment %s has no manifest: no templated config was applied to it", t.name)
				}
			}

			manifest, err := t.server.GetDeploymentManifest(t.name, name)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, manifest)
		},
	}
}
