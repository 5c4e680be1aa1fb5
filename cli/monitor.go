package main

import (
	"encoding/json"
	"fmt"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// monitorCommand is "lxd-deploy monitor", the counterpart of "lxc monitor": it follows
// /1.0/events until interrupted.
func (a *app) monitorCommand() *cobra.Command {
	var types []string
	var deployment string
	var pretty bool
	var allProjects bool
	cmd := &cobra.Command{
		Use:   "monitor [<remote>:] [--type lifecycle,operation,logging] [--deployment D] [--pretty]",
		Short: "Follow the daemon's events: lifecycle changes, operations and (admins) its log",
		Long: "Follow the daemon's events, as \"lxc monitor\" does, until interrupted. Each event is printed as YAML,\n" +
			"or as one line with --pretty. Types: lifecycle, operation, logging (the daemon's own log lines,\n" +
			"for admins only); the default is lifecycle and operation. --deployment keeps the events that\n" +
			"concern one deployment.",
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, t := range types {
				switch t {
				case lxdapi.EventTypeLifecycle, lxdapi.EventTypeOperation, lxdapi.EventTypeLogging:
				default:
					return fmt.Errorf("event type %q is not valid: use lifecycle, operation or logging", t)
				}
			}

			if deployment != "" {
				err := validate.Name("deployment", deployment)
				if err != nil {
					return err
				}
			}

			server, err := a.connectRemoteArg(args)
			if err != nil {
				return err
			}

			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var writeErr error
			err = server.UseProject(a.project).GetEvents(ctx, client.EventsArgs{Types: types, AllProjects: allProjects}, func(event lxdapi.Event) {
				if writeErr != nil || (deployment != "" && !eventConcerns(event, deployment)) {
					return
				}

				if pretty {
					_, writeErr = fmt.Fprintln(a.stdout, prettyEvent(event))
				} else {
					writeErr = writeEventYAML(a, event)
				}

				if writeErr != nil {
					stop()
				}
			})
			if writeErr != nil {
				return writeErr
			}

			return explain(err)
		},
	}

	cmd.Flags().StringSliceVar(&types, "type", nil, "event types to show: lifecycle, operation, logging (comma separated)")
	cmd.Flags().StringVar(&deployment, "deployment", "", "show only the events of this deployment")
	cmd.Flags().BoolVar(&pretty, "pretty", false, "one line per event instead of YAML")
	cmd.Flags().BoolVar(&allProjects, "all-projects", false, "show the events of every project")
	return cmd
}

// writeEventYAML prints an event as "lxc monitor" does: YAML documents one after another.
func writeEventYAML(a *app, event lxdapi.Event) error {
	var metadata any
	_ = json.Unmarshal(event.Metadata, &metadata)
	doc := yaml.MapSlice{
		{Key: "type", Value: event.Type},
		{Key: "timestamp", Value: event.Timestamp},
		{Key: "location", Value: event.Location},
		{Key: "project", Value: event.Project},
		{Key: "metadata", Value: metadata},
	}

	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}

	_, err = fmt.Fprintf(a.stdout, "%s\n", out)
	return err
}

// prettyEvent is one line saying what happened.
func prettyEvent(event lxdapi.Event) string {
	ts := event.Timestamp.Format("2006-01-02T15:04:05.000Z07:00")
	switch event.Type {
	case lxdapi.EventTypeLifecycle:
		var l lxdapi.EventLifecycle
		_ = json.Unmarshal(event.Metadata, &l)
		line := fmt.Sprintf("%s lifecycle %s %s", ts, l.Action, l.Source)
		if l.Requestor != nil {
			line += fmt.Sprintf(" (by %s over %s)", l.Requestor.Username, l.Requestor.Protocol)
		}

		return line
	case lxdapi.EventTypeOperation:
		var op lxdapi.Operation
		_ = json.Unmarshal(event.Metadata, &op)
		line := fmt.Sprintf("%s operation %s %s: %s", ts, op.ID, op.Status, op.Description)
		if op.Err != "" {
			line += ": " + op.Err
		}

		return line
	case lxdapi.EventTypeLogging:
		var l lxdapi.EventLogging
		_ = json.Unmarshal(event.Metadata, &l)
		keys := make([]string, 0, len(l.Context))
		for k := range l.Context {
			keys = append(keys, k)
		}

		sort.Strings(keys)
		line := fmt.Sprintf("%s logging %s %s", ts, l.Level, l.Message)
		for _, k := range keys {
			line += fmt.Sprintf(" %s=%q", k, l.Context[k])
		}

		return line
	}

	return fmt.Sprintf("%s %s %s", ts, event.Type, event.Metadata)
}

// eventConcerns reports whether an event is about the named deployment: a lifecycle event
// whose source, or an operation one of whose resources, is under the deployment's URL; a
// log line that names it.
func eventConcerns(event lxdapi.Event, deployment string) bool {
	under := func(u string) bool {
		path, _, _ := strings.Cut(u, "?")
		prefix := api.DeploymentURL(event.Project, deployment)
		prefix, _, _ = strings.Cut(prefix, "?")
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}

	switch event.Type {
	case lxdapi.EventTypeLifecycle:
		var l lxdapi.EventLifecycle
		_ = json.Unmarshal(event.Metadata, &l)
		return under(l.Source)
	case lxdapi.EventTypeOperation:
		var op lxdapi.Operation
		_ = json.Unmarshal(event.Metadata, &op)
		for _, urls := range op.Resources {
			for _, u := range urls {
				if under(u) {
					return true
				}
			}
		}
	case lxdapi.EventTypeLogging:
		var l lxdapi.EventLogging
		_ = json.Unmarshal(event.Metadata, &l)
		return l.Context["deployment"] == deployment
	}

	return false
}
