package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

func (a *app) registryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Manage template registries",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(&cobra.Command{
		Use:   "index <dir>",
		Short: "Write the index.json an HTTP template registry serves",
		Long: `Walk a registry directory laid out as [<collection>/]<template>/<version>/<template>.<py|jinja|star>
(with its .schema and helper files) and write <dir>/index.json, which lists every template,
version and file with its SHA-256. Publish it with the registry: fetchers read it first.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			idx, err := registry.WriteIndex(args[0])
			if err != nil {
				return err
			}

			versions := 0
			for _, t := range idx.Templates {
				versions += len(t.Versions)
			}

			_, err = fmt.Fprintf(a.stdout, "Wrote %s: %d templates, %d versions\n", filepath.Join(args[0], registry.IndexFileName), len(idx.Templates), versions)
			return err
		},
	})

	return cmd
}

// deployConfig is the config "deploy" sends: one resource of the template.
func deployConfig(name string, ref string, properties map[string]any) ([]byte, error) {
	resource := yaml.MapSlice{{Key: "name", Value: name}, {Key: "type", Value: ref}}
	if len(properties) > 0 {
		resource = append(resource, yaml.MapItem{Key: "properties", Value: properties})
	}

	return yaml.Marshal(yaml.MapSlice{{Key: "resources", Value: []any{resource}}})
}

func (a *app) deployCommand() *cobra.Command {
	var flags templateFlags
	var name string
	cmd := &cobra.Command{
		Use:   "deploy <template>:<version>",
		Short: "Create a deployment from a registry template",
		Long: `Create a deployment from one template of a registry, e.g.

  lxd-deploy deploy github.com/acme/templates/web:v1 --properties image=debian/12 --name shop
  lxd-deploy deploy web:v1.2 --registry ./templates --name shop

The CLI fetches the template (the highest patch of the version asked for) and the templates
it uses, and sends them with a one-resource config; --properties are the template's
properties. The daemon never fetches.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := args[0]
			parsed, err := registry.ParseReference(ref)
			if err != nil {
				return err
			}

			if name == "" {
				name = parsed.Template
				err = validate.Name("deployment", name)
				if err != nil {
					return fmt.Errorf("template %s is no deployment name (%v): name the deployment with --name", parsed.Template, err)
				}
			}

			t, err := a.connectArg(name, "deployment")
			if err != nil {
				return err
			}

			properties, err := parseProperties(flags.properties)
			if err != nil {
				return err
			}

			config, err := deployConfig(t.name, ref, properties)
			if err != nil {
				return err
			}

			fetcher, err := flags.fetcher(ref)
			if err != nil {
				return err
			}

			local, err := expandLocally(config, map[string][]byte{}, fetcher, templates.Env{Deployment: t.name, Project: t.server.Project()})
			if err != nil {
				return err
			}

			req := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: t.name}}
			req.Template = string(local.config)
			req.TemplateImports = stringImports(local.imports)
			err = t.server.CreateDeployment(req)
			if err != nil {
				return err
			}

			shapes := make([]string, 0, len(local.expansion.Config.Resources))
			for _, r := range local.expansion.Config.Resources {
				shapes = append(shapes, r.Name)
			}

			_, err = fmt.Fprintf(a.stdout, "Deployment %s created from %s%s: shapes %s\n", t.name, ref, asManifest(t.server, t.name), strings.Join(shapes, ", "))
			return err
		},
	}

	cmd.Flags().StringVar(&name, "name", "", "[<remote>:]name of the deployment (default: the template's name)")
	cmd.Flags().StringArrayVar(&flags.properties, "properties", nil, "the template's properties: key=value,... (values are YAML: 3, true, [a, b]; a dotted key sets a nested value; repeatable)")
	cmd.Flags().StringArrayVar(&flags.registries, "registry", nil, "where to fetch from: URL or DIR (serves short references and the template's own registry), or <host>/<owner>/<repo>=URL|DIR (repeatable); github.com registries are read from GitHub otherwise")
	return cmd
}
