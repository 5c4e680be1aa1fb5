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

	cmd.AddCommand(a.registryDefaultCommand(), a.registryAddCommand(), a.registryRemoveCommand())
	return cmd
}

// registryAddCommand records where a registry is served, in config.yml.
func (a *app) registryAddCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add <host>/<owner>/<repo> <URL|DIR>",
		Short: "Say where a template registry is served",
		Long: `Record in config.yml that references to a registry (github.com/acme/templates/web:v1, or web:v1
when it is the default registry) are fetched from a URL or a directory, as --registry
NAME=URL|DIR does for one command. The URL serves the registry's layout
(<template>/<version>/<template>.<ext>), with an index.json ("lxd-deploy registry index"),
or with directory listings, or neither (then only versions with a directory of that exact
name resolve).`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := registry.ValidRegistry(args[0])
			if err != nil || strings.Count(args[0], "/") != 2 {
				return fmt.Errorf("registry %q is not valid: write <host>/<owner>/<repo>, e.g. github.com/acme/templates", args[0])
			}

			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			if c.Registries == nil {
				c.Registries = map[string]string{}
			}

			c.Registries[args[0]] = args[1]
			return c.save()
		},
	}
}

// registryRemoveCommand forgets where a registry is served.
func (a *app) registryRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove <host>/<owner>/<repo>",
		Short: "Forget where a template registry is served",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			_, ok := c.Registries[args[0]]
			if !ok {
				return fmt.Errorf("registry %q is not in %s: nothing to remove", args[0], c.path())
			}

			delete(c.Registries, args[0])
			return c.save()
		},
	}
}

// registryDefaultCommand shows or sets the default template registry of config.yml.
func (a *app) registryDefaultCommand() *cobra.Command {
	var unset bool
	cmd := &cobra.Command{
		Use:   "default [<host>/<owner>/<repo>[/<collection>]]",
		Short: "Show or set the registry that short template references resolve against",
		Long: `Show or set the default template registry: short references (<template>:<version>, e.g.
redis:v1) in configs and "deploy" resolve against it, as with Deployment Manager's default
registry (seed 001). github.com registries are read from GitHub unless config.yml's
registries maps them elsewhere; a bare --registry URL|DIR overrides the default for one
command.

  lxd-deploy registry default github.com/kubernetes/application-dm-templates
  lxd-deploy registry default --unset`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}

			if len(args) == 0 && !unset {
				if c.DefaultRegistry == "" {
					_, err = fmt.Fprintln(a.stdout, "No default registry: set one with \"lxd-deploy registry default <host>/<owner>/<repo>[/<collection>]\"")
					return err
				}

				_, err = fmt.Fprintln(a.stdout, c.DefaultRegistry)
				return err
			}

			if unset {
				if len(args) > 0 {
					return fmt.Errorf("give a registry or --unset, not both")
				}

				c.DefaultRegistry = ""
				return c.save()
			}

			err = registry.ValidRegistry(args[0])
			if err != nil {
				return err
			}

			c.DefaultRegistry = args[0]
			return c.save()
		},
	}

	cmd.Flags().BoolVar(&unset, "unset", false, "remove the default registry")
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
  lxd-deploy deploy redis:v1      (against the default registry: "lxd-deploy registry default")

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
			if err == nil && flags.strictUndefined {
				config, err = withStrictUndefined(config)
			}

			if err != nil {
				return err
			}

			err = a.configureRegistries(&flags)
			if err != nil {
				return err
			}

			fetcher, err := flags.fetcher(ref)
			if err != nil {
				return err
			}

			local, err := a.expandLocally(config, map[string][]byte{}, fetcher, templates.Env{Deployment: t.name, Project: t.server.Project()})
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
