package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instanceReportHealthCommand is "shape instance report-health": an instance of a shape with
// a ttl check reports its own health, from inside through the governor socket (with
// --socket, --cert and --key), or an admin reports for it through a remote.
func (a *app) instanceReportHealthCommand() *cobra.Command {
	var f governorFlags
	var output string
	cmd := &cobra.Command{
		Use:   "report-health [<remote>:]<deployment> <shape> <instance> passing|failing",
		Short: "Report an instance's health to its shape's ttl check",
		Long: `Report the health of an instance of a shape with a ttl health check: each report counts
as one check result, and an instance that sends none within the ttl is unhealthy.

From inside the instance, through the governor socket with a deployment key's key pair
(the daemon accepts a report there only for the instance itself):
  lxd-deploy deployment shape instance report-health shop web web-1 passing \
    --socket ` + client.GovernorSocket + ` --cert gov.crt --key gov.key --output "queue depth 3"

Elsewhere, through a remote (admins, and admin keys, may report for any instance).`,
		Args: exactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			report := api.DeploymentInstanceHealthPut{Status: args[3], Output: output}
			err := validate.HealthReport(report)
			if err != nil {
				return err
			}

			server, deployment, err := a.healthReporter(&f, args[0], args[1], args[2])
			if err != nil {
				return err
			}

			err = server.ReportDeploymentShapeInstanceHealth(deployment, args[1], args[2], report)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Instance %s reported %s\n", args[2], args[3])
			return err
		},
	}

	cmd.Flags().StringVar(&output, "output", "", "what the instance has to say (at most 1 KiB; admins see it as the check's output)")
	cmd.Flags().StringVar(&f.socket, "socket", "", "inside an instance: the governor socket ("+client.GovernorSocket+"), with --cert and --key")
	cmd.Flags().StringVar(&f.cert, "cert", "", "with --socket: certificate of a deployment key (PEM)")
	cmd.Flags().StringVar(&f.key, "key", "", "with --socket: private key of that certificate (PEM)")
	return cmd
}

// healthReporter connects for a report: the governor socket with tokens signed by the key
// pair when --socket is given, the remote in deploymentArg otherwise. It returns the
// deployment's name without the remote.
func (a *app) healthReporter(f *governorFlags, deploymentArg string, shape string, instance string) (*client.Server, string, error) {
	if f.socket == "" {
		if f.cert != "" || f.key != "" {
			return nil, "", errors.New("--cert and --key are for --socket (inside an instance): a remote has its own key pair")
		}

		t, err := a.instanceTarget(deploymentArg, shape, instance)
		if err != nil {
			return nil, "", err
		}

		return t.server, t.name, nil
	}

	err := validate.Name("instance", instance)
	if err == nil {
		err = validate.Name("shape", shape)
	}

	if err == nil {
		err = validate.Name("deployment", deploymentArg)
	}

	if err != nil {
		return nil, "", err
	}

	f.deployment = deploymentArg
	server, err := a.governorConnect(f)
	return server, deploymentArg, err
}
