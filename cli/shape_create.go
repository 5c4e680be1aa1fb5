package main

import (
	"fmt"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// shapeCreateFlags are the flags of "shape create".
type shapeCreateFlags struct {
	description string
	image       string
	profiles    []string
	minimum     int
	maximum     int
	maximumSet  bool
	vm          bool
	resources   resourceBoundFlags

	// imageServers are the configured image-server remotes a "<remote>:<alias>" image
	// may name (remote_images.go).
	imageServers map[string]imageServer
}

// request builds the creation request from the flags.
func (f shapeCreateFlags) request(name string) (api.DeploymentShapesPost, error) {
	template := lxdapi.InstancesPost{
		Type:   lxdapi.InstanceTypeContainer,
		Source: lxdapi.InstanceSource{Type: "none"},
	}

	if f.vm {
		template.Type = lxdapi.InstanceTypeVM
	}

	if f.image != "" {
		template.Source = imageSource(f.image)
		if strings.Contains(f.image, ":") {
			var err error
			template.Source, err = remoteImageSource(f.image, f.imageServers)
			if err != nil {
				return api.DeploymentShapesPost{}, err
			}
		}
	}

	// No --from-profile leaves the profiles unset, so that LXD applies its default profile.
	if len(f.profiles) > 0 {
		template.Profiles = f.profiles
	}

	maximum := f.maximum
	if !f.maximumSet {
		maximum = max(f.minimum, 1)
	}

	req := api.DeploymentShapesPost{
		DeploymentShapePost: api.DeploymentShapePost{Name: name},
		DeploymentShapePut: api.DeploymentShapePut{
			Description:      f.description,
			Config:           map[string]string{},
			InstanceTemplate: template,
			ScalingMinimum:   f.minimum,
			ScalingMaximum:   maximum,
		},
	}

	err := validate.Bounds(req.ScalingMinimum, req.ScalingMaximum)
	if err != nil {
		return api.DeploymentShapesPost{}, err
	}

	req.ResourceBounds, err = f.resources.bounds()
	if err == nil {
		err = validate.ResourceBounds(req.DeploymentShapePut)
	}

	if err != nil {
		return api.DeploymentShapesPost{}, err
	}

	return req, validate.InstanceTemplate(template)
}

func (a *app) shapeCreateCommand() *cobra.Command {
	var f shapeCreateFlags
	cmd := &cobra.Command{
		Use:   "create [<remote>:]<deployment> <shape>",
		Short: "Create a shape",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := validate.Name("shape", args[1])
			if err != nil {
				return err
			}

			f.maximumSet = cmd.Flags().Changed("scaling-max")
			if strings.Contains(f.image, ":") {
				c, err := a.loadConfig()
				if err != nil {
					return err
				}

				f.imageServers, err = c.imageServers()
				if err != nil {
					return err
				}
			}

			req, err := f.request(args[1])
			if err != nil {
				return err
			}

			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			err = t.server.CreateDeploymentShape(t.name, req)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Shape %s created\n", args[1])
			return err
		},
	}

	flags := cmd.Flags()
	flags.StringVar(&f.image, "from-image", "", "image: an alias or fingerprint in the LXD lxd-deployd uses, or <remote>:<alias> on an image server remote (lxd-deploy remote add NAME URL --protocol lxd|simplestreams)")
	flags.StringArrayVar(&f.profiles, "from-profile", nil, "LXD profile to apply (repeatable; default: LXD's default profile)")
	flags.IntVar(&f.minimum, "scaling-min", 0, "minimum number of instances")
	flags.IntVar(&f.maximum, "scaling-max", 0, "maximum number of instances (default: the minimum, at least 1)")
	flags.BoolVar(&f.vm, "vm", false, "instances are virtual machines instead of containers")
	flags.StringVar(&f.description, "description", "", "description of the shape")
	flags.StringVar(&f.resources.cpu, "cpu-bounds", "", "resource bounds of limits.cpu for resizes, MIN-MAX (such as 1-4)")
	flags.StringVar(&f.resources.memory, "memory-bounds", "", "resource bounds of limits.memory for resizes, MIN-MAX (such as 64MiB-2GiB)")
	return cmd
}

// imageSource refers to an image by fingerprint when the value looks like one (at least 12
// hex digits, as lxc accepts), else by alias.
func imageSource(image string) lxdapi.InstanceSource {
	if len(image) >= 12 && strings.Trim(strings.ToLower(image), "0123456789abcdef") == "" {
		return lxdapi.InstanceSource{Type: "image", Fingerprint: strings.ToLower(image)}
	}

	return lxdapi.InstanceSource{Type: "image", Alias: image}
}
