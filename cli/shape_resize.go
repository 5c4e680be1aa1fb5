package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// shapeResizeCommand is "lxd-deploy deployment shape resize": new CPU and memory limits for
// a shape's instances, applied live (doc/cli.md).
func (a *app) shapeResizeCommand() *cobra.Command {
	var req api.DeploymentShapeResourcesPut
	cmd := &cobra.Command{
		Use:   "resize [<remote>:]<deployment> <shape> [--cpu N] [--memory SIZE] [--reason TEXT]",
		Short: "Resize the instances of a shape in place (CPU count, memory limit)",
		Long: `Set new limits.cpu and limits.memory in the shape's template, within its resource_bounds,
as a new revision (cause resize), and apply them live to every running instance without a
restart. An instance whose memory usage would not fit the lower limit (plus a margin) is left
at its limit, outdated, and the reason is shown.`,
		Example: "  lxd-deploy deployment shape resize dep1 web --memory 512MiB --reason \"92% memory\"",
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for key, value := range req.Limits() {
				_, err := validate.ParseResource(key, value)
				if err != nil {
					return err
				}
			}

			if len(req.Limits()) == 0 {
				return fmt.Errorf("give --cpu, --memory or both")
			}

			t, err := a.shapeTarget(args[0], args[1])
			if err != nil {
				return err
			}

			var op *client.Operation
			err = a.waitOperation(cmd.Context(), "Resizing "+args[1], "Shape "+args[1]+" resized", func() (*client.Operation, error) {
				op, err = t.server.ResizeDeploymentShape(t.name, args[1], req)
				return op, err
			})
			if err != nil {
				return err
			}

			return a.printResizeResults(op)
		},
	}

	flags := cmd.Flags()
	flags.StringVar(&req.CPU, "cpu", "", "CPU count (limits.cpu)")
	flags.StringVar(&req.Memory, "memory", "", "memory limit, an absolute size such as 512MiB (limits.memory)")
	flags.StringVar(&req.Reason, "reason", "", "why, recorded in the revision and the activity log")
	return cmd
}

// printResizeResults writes one line per instance the resize considered.
func (a *app) printResizeResults(op *client.Operation) error {
	var meta struct {
		Instances map[string]api.DeploymentResizeResult `json:"instances"`
	}

	data, err := json.Marshal(op.Metadata)
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}

	if err != nil {
		return fmt.Errorf("read the resize's results: %w", err)
	}

	names := make([]string, 0, len(meta.Instances))
	for name := range meta.Instances {
		names = append(names, name)
	}

	sort.Strings(names)
	for _, name := range names {
		r := meta.Instances[name]
		line := name + ": " + r.Result
		if r.Reason != "" {
			line += " (" + r.Reason + ")"
		}

		_, err = fmt.Fprintln(a.stdout, line)
		if err != nil {
			return err
		}
	}

	return nil
}

// resourceBoundProperties are the shape properties resource_bounds.<key>.minimum and
// .maximum for get, set and unset.
func resourceBoundProperties() map[string]property[api.DeploymentShape] {
	out := map[string]property[api.DeploymentShape]{}
	for _, key := range validate.ResourceKeys {
		for _, end := range []string{"minimum", "maximum"} {
			field := func(b *api.DeploymentShapeResourceBound) *string {
				if end == "minimum" {
					return &b.Minimum
				}

				return &b.Maximum
			}

			out["resource_bounds."+key+"."+end] = property[api.DeploymentShape]{
				get: func(s *api.DeploymentShape) string {
					b := s.ResourceBounds[key]
					return *field(&b)
				},
				set: func(s *api.DeploymentShape, value string) error {
					if value != "" {
						_, err := validate.ParseResource(key, value)
						if err != nil {
							return err
						}
					}

					if s.ResourceBounds == nil {
						s.ResourceBounds = map[string]api.DeploymentShapeResourceBound{}
					}

					b := s.ResourceBounds[key]
					*field(&b) = value
					if b == (api.DeploymentShapeResourceBound{}) {
						delete(s.ResourceBounds, key)
					} else {
						s.ResourceBounds[key] = b
					}

					return nil
				},
			}
		}
	}

	return out
}

// resourceBoundFlags are the bounds "shape create" takes.
type resourceBoundFlags struct {
	cpu    string // "1-4"
	memory string // "64MiB-2GiB"
}

// bounds turns the flags into resource_bounds.
func (f resourceBoundFlags) bounds() (map[string]api.DeploymentShapeResourceBound, error) {
	out := map[string]api.DeploymentShapeResourceBound{}
	for key, value := range map[string]string{api.LimitCPU: f.cpu, api.LimitMemory: f.memory} {
		if value == "" {
			continue
		}

		low, high, ok := strings.Cut(value, "-")
		if !ok {
			return nil, fmt.Errorf("%s bounds %q: give MIN-MAX, such as 64MiB-2GiB (either side may be empty)", key, value)
		}

		out[key] = api.DeploymentShapeResourceBound{Minimum: low, Maximum: high}
	}

	if len(out) == 0 {
		return nil, nil
	}

	return out, nil
}

// instanceLimits shows the limits an instance runs with, for instance list.
func instanceLimits(limits map[string]string) string {
	var parts []string
	if cpu := limits[api.LimitCPU]; cpu != "" {
		parts = append(parts, "cpu="+cpu)
	}

	if memory := limits[api.LimitMemory]; memory != "" {
		parts = append(parts, "memory="+memory)
	}

	return strings.Join(parts, " ")
}
