package main

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// shapeCommand is "lxd-deploy deployment shape": the kinds of instances of a deployment.
func (a *app) shapeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "shape",
		Aliases: []string{"shapes"},
		Short:   "Manage deployment shapes",
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}

	cmd.AddCommand(
		a.shapeListCommand(),
		a.shapeShowCommand(),
		a.shapeGetCommand(),
		a.shapeSetCommand(),
		a.shapeUnsetCommand(),
		a.shapeCreateCommand(),
		a.shapeEditCommand(),
		a.shapeRenameCommand(),
		a.shapeRebalanceCommand(),
		a.shapeDeleteCommand(),
		a.instanceCommand(),
		a.shapeScaleRequestCommand(),
		a.shapeScheduleCommand(),
		a.shapeEndpointsCommand(),
		a.shapeRevisionCommand(), a.shapeRollbackCommand(), a.shapeRolloutCommand(), a.shapeTriggersCommand(),
		a.shapeHealthCommand(),
		a.shapeWarmPoolCommand(),
		a.shapeResizeCommand(),
	)

	return cmd
}

// shapeFields says what get, set and unset reach on a shape.
func shapeFields() configurable[api.DeploymentShape] {
	fields := configurable[api.DeploymentShape]{
		kind:   "shape",
		config: func(s *api.DeploymentShape) *map[string]string { return &s.Config },
		properties: map[string]property[api.DeploymentShape]{
			"name":            readOnly(func(s *api.DeploymentShape) string { return s.Name }),
			"description":     stringProperty(func(s *api.DeploymentShape) *string { return &s.Description }),
			"scaling_minimum": intProperty("scaling_minimum", func(s *api.DeploymentShape) *int { return &s.ScalingMinimum }),
			"scaling_maximum": intProperty("scaling_maximum", func(s *api.DeploymentShape) *int { return &s.ScalingMaximum }),
			"scaling_current": readOnly(func(s *api.DeploymentShape) string { return strconv.Itoa(s.ScalingCurrent) }),
		},
	}

	maps.Copy(fields.properties, rolloutProperties())
	maps.Copy(fields.properties, resourceBoundProperties())
	return fields
}

// shapeSource summarises where a shape's instances come from, for list.
func shapeSource(t lxdapi.InstancesPost) string {
	var parts []string
	switch t.Source.Type {
	case "image":
		name := t.Source.Alias
		if name == "" {
			name = shortFingerprint(t.Source.Fingerprint)
		}

		if name == "" {
			name = "(by properties)"
		}

		parts = append(parts, "image:"+name)
	case "copy":
		parts = append(parts, "copy:"+t.Source.Source)
	}

	if len(t.Profiles) > 0 {
		parts = append(parts, "profiles:"+strings.Join(t.Profiles, ","))
	}

	if len(parts) == 0 {
		parts = append(parts, "none")
	}

	if t.Type == lxdapi.InstanceTypeVM {
		parts = append(parts, "(vm)")
	}

	return strings.Join(parts, " ")
}

// shapeRows turns shapes into list rows, sorted by name.
func shapeRows(shapes []api.DeploymentShape) [][]string {
	rows := make([][]string, 0, len(shapes))
	for _, s := range shapes {
		rows = append(rows, []string{
			s.Name,
			strconv.Itoa(s.ScalingMinimum),
			strconv.Itoa(s.ScalingMaximum),
			strconv.Itoa(s.ScalingCurrent),
			shapeSource(s.InstanceTemplate),
			s.Description,
		})
	}

	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// shapeTarget connects for "[<remote>:]<deployment> <shape>" and checks the shape name.
func (a *app) shapeTarget(deploymentArg string, shape string) (*target, error) {
	err := validate.Name("shape", shape)
	if err != nil {
		return nil, err
	}

	return a.connectArg(deploymentArg, "deployment")
}

func (a *app) shapeListCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "list [<remote>:]<deployment>",
		Aliases: []string{"ls"},
		Short:   "List the shapes of a deployment",
		Args:    exactArgs(1),
	}, a.inDeployment(func(t *target) (listing, error) {
		shapes, err := t.server.GetDeploymentShapes(t.name)
		return newListing([]string{"NAME", "MIN", "MAX", "CURRENT", "SOURCE", "DESCRIPTION"}, shapes, shapeRows), err
	}))
}

// shapeObject reaches a shape, "[<remote>:]<deployment> <shape>", for show, get, set and unset.
func (a *app) shapeObject() object[api.DeploymentShape] {
	return object[api.DeploymentShape]{
		fields: shapeFields(),
		names:  2,
		read: func(args []string) (*api.DeploymentShape, error) {
			_, shape, _, err := a.readShape(args[0], args[1])
			return shape, err
		},
		update: func(args []string, change func(s *api.DeploymentShape) error) error {
			return a.updateShape(args[0], args[1], change)
		},
	}
}

func (a *app) shapeShowCommand() *cobra.Command {
	return showCommand(a, a.shapeObject(), &cobra.Command{
		Use:   "show [<remote>:]<deployment> <shape>",
		Short: "Show a shape",
		Args:  exactArgs(2),
	})
}

func (a *app) shapeGetCommand() *cobra.Command {
	return getCommand(a, a.shapeObject(), &cobra.Command{
		Use:   "get [<remote>:]<deployment> <shape> <key>",
		Short: "Get a shape config key, or with --property a property",
		Args:  exactArgs(3),
	}, "get a property (description, scaling_minimum, scaling_maximum, ...) instead of a config key")
}

func (a *app) shapeSetCommand() *cobra.Command {
	return setCommand(a.shapeObject(), &cobra.Command{
		Use:   "set [<remote>:]<deployment> <shape> <key>=<value>...",
		Short: "Set shape config keys, or with --property properties",
		Long:  "Set shape config keys, or with --property the properties description, scaling_minimum and scaling_maximum.\nAn empty value removes a config key.",
		Args:  rangeArgs(3, -1),
	}, "set properties (description, scaling_minimum, scaling_maximum) instead of config keys")
}

func (a *app) shapeUnsetCommand() *cobra.Command {
	return unsetCommand(a.shapeObject(), &cobra.Command{
		Use:   "unset [<remote>:]<deployment> <shape> <key>...",
		Short: "Unset shape config keys, or with --property properties",
		Args:  rangeArgs(3, -1),
	}, "unset properties (description, scaling_minimum, scaling_maximum) instead of config keys")
}

// readShape connects for "[<remote>:]<deployment> <shape>" and reads the shape with its
// ETag, which a write sends back so that a concurrent change is refused.
func (a *app) readShape(deploymentArg string, name string) (*target, *api.DeploymentShape, string, error) {
	t, err := a.shapeTarget(deploymentArg, name)
	if err != nil {
		return nil, nil, "", err
	}

	shape, etag, err := t.server.GetDeploymentShape(t.name, name)
	if err != nil {
		return nil, nil, "", err
	}

	return t, shape, etag, nil
}

// updateShape reads a shape, changes it and writes it back with the ETag of the read.
func (a *app) updateShape(deploymentArg string, name string, change func(s *api.DeploymentShape) error) error {
	t, shape, etag, err := a.readShape(deploymentArg, name)
	if err != nil {
		return err
	}

	err = change(shape)
	if err != nil {
		return err
	}

	err = validate.Bounds(shape.ScalingMinimum, shape.ScalingMaximum)
	if err != nil {
		return err
	}

	return explain(t.server.UpdateDeploymentShape(t.name, name, shape.Writable(), etag))
}

func (a *app) shapeEditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "edit [<remote>:]<deployment> <shape>",
		Short: "Edit a shape as YAML",
		Long:  "Edit a shape's writable fields as YAML in $VISUAL or $EDITOR, or, when stdin is not a terminal,\nreplace them with the YAML read from stdin. A new instance_template applies to instances created afterwards.",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, shape, etag, err := a.readShape(args[0], args[1])
			if err != nil {
				return err
			}

			return a.editYAML("shape "+args[1], shape.Writable(), func(data []byte) error {
				var edited api.DeploymentShape
				err := decodeYAML(data, &edited)
				if err != nil {
					return err
				}

				err = validate.Bounds(edited.ScalingMinimum, edited.ScalingMaximum)
				if err != nil {
					return err
				}

				err = validate.InstanceTemplate(edited.InstanceTemplate)
				if err != nil {
					return err
				}

				put, original := edited.Writable(), shape.Writable()
				keepUnsetLists(&original, &put)
				return t.server.UpdateDeploymentShape(t.name, args[1], put, etag)
			})
		},
	}
}

func (a *app) shapeRenameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rename [<remote>:]<deployment> <shape> <new-name>",
		Short: "Rename a shape",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := validate.Name("shape", args[2])
			if err != nil {
				return err
			}

			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.RenameDeploymentShape(t.name, args[1], api.DeploymentShapePost{Name: args[2]})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Shape %s renamed to %s\n", args[1], args[2])
			return err
		},
	}
}

func (a *app) shapeDeleteCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "delete [<remote>:]<deployment> <shape>",
		Aliases: []string{"rm"},
		Short:   "Delete a shape",
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.DeleteDeploymentShape(t.name, args[1], force)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Shape %s deleted\n", args[1])
			return err
		},
	}

	cmd.Flags().BoolVar(&force, "force", false, "also delete the shape's instances")
	return cmd
}
