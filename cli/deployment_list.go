package main

import (
	"errors"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// deploymentListLong says what "deployment list" filters, as "lxc list" does.
const deploymentListLong = `List deployments

Filters, as "lxc list" takes them; a deployment is listed when it matches them all:
  - a word, such as "web", lists the deployments whose name starts with it; it is a
    regular expression (such as "web-[0-9]+$")
  - key=value matches a field (name, description, governor_webhook_url, project) or
    a config key (such as "user.team=front"); the value is a regular expression that
    must match the whole value, case-insensitively
The server filters (GET /1.0/deployments?filter=, in LXD's filter language).

--all-projects lists the deployments of every project, with a PROJECT column.`

// deploymentListFilters splits "deployment list"'s arguments the way "lxc list" does: a
// first argument "<remote>:" (or "<remote>:<word>") names the remote, and every other
// argument is a filter. It returns the remote argument ("" for the default remote) and the
// filters as the client takes them, "key=value", a word becoming a name prefix.
func deploymentListFilters(args []string) (string, []string) {
	remote := ""
	if len(args) > 0 && strings.Contains(args[0], ":") && !strings.Contains(args[0], "=") {
		var word string
		remote, word, _ = strings.Cut(args[0], ":")
		remote += ":"
		args = args[1:]
		if word != "" {
			args = append([]string{word}, args...)
		}
	}

	filters := make([]string, 0, len(args))
	for _, arg := range args {
		key, value, found := strings.Cut(arg, "=")
		if found {
			// A key that is not a field is a config key, as in "lxc list user.team=front";
			// the server names config keys config.<key>.
			switch key {
			case "name", "description", "governor_webhook_url", "project":
			default:
				if !strings.HasPrefix(key, "config.") {
					key = "config." + key
				}
			}

			filters = append(filters, key+"="+value)
			continue
		}

		// LXD anchors a regular expression at both ends unless it holds ^ or $: "^word"
		// matches the names that start with word, as "lxc list word" does.
		if !strings.ContainsAny(arg, "^$") {
			arg = "^" + arg
		}

		filters = append(filters, "name="+arg)
	}

	return remote, filters
}

// deploymentProjectRows are deploymentRows with the project in front, sorted by project
// then name, for --all-projects.
func deploymentProjectRows(deployments []api.Deployment) [][]string {
	rows := make([][]string, 0, len(deployments))
	for _, d := range deployments {
		rows = append(rows, append([]string{d.Project}, deploymentRows([]api.Deployment{d})[0]...))
	}

	sort.Slice(rows, func(i, j int) bool {
		if rows[i][0] != rows[j][0] {
			return rows[i][0] < rows[j][0]
		}

		return rows[i][1] < rows[j][1]
	})

	return rows
}

func (a *app) deploymentListCommand() *cobra.Command {
	var allProjects bool
	cmd := &cobra.Command{
		Use:     "list [<remote>:] [<filter>...]",
		Aliases: []string{"ls"},
		Short:   "List deployments",
		Long:    deploymentListLong,
		Args:    rangeArgs(0, -1),
	}

	cmd.Flags().BoolVar(&allProjects, "all-projects", false, "list the deployments of every project")
	return a.listCommand(cmd, func(args []string) (listing, error) {
		if allProjects && cmd.Flags().Changed("project") {
			return listing{}, errors.New("--project and --all-projects cannot be used together: drop one")
		}

		remote, filters := deploymentListFilters(args)
		var remoteArgs []string
		if remote != "" {
			remoteArgs = []string{remote}
		}

		server, err := a.connectRemoteArg(remoteArgs)
		if err != nil {
			return listing{}, err
		}

		if allProjects {
			deployments, err := server.GetDeploymentsAllProjectsWithFilter(filters)
			return newListing([]string{"PROJECT", "NAME", "DESCRIPTION", "SHAPES", "WEBHOOK"}, deployments, deploymentProjectRows), err
		}

		deployments, err := server.GetDeploymentsWithFilter(filters)
		return newListing([]string{"NAME", "DESCRIPTION", "SHAPES", "WEBHOOK"}, deployments, deploymentRows), err
	})
}
