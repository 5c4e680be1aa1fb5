package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// webhookCommand is "lxd-deploy deployment webhook": the deployment's webhook to its
// governor (signing secret, deliveries, ping).
func (a *app) webhookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Manage the deployment's webhook to its governor",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	cmd.AddCommand(a.webhookSecretCommand(), a.webhookDeliveriesCommand(), a.webhookRedeliverCommand(), a.webhookPingCommand())
	return cmd
}

func (a *app) webhookSecretCommand() *cobra.Command {
	var rotate bool
	cmd := &cobra.Command{
		Use:   "secret [<remote>:]<deployment> [--rotate]",
		Short: "Show (or rotate) the secret deliveries are signed with",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			secret, err := t.server.GetWebhookSecret(t.name, rotate)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintln(a.stdout, secret)
			return err
		},
	}

	cmd.Flags().BoolVar(&rotate, "rotate", false, "replace the secret with a new one (the governor needs the new one)")
	return cmd
}

// deliveryRows turns webhook deliveries into list rows, in the server's order (newest first).
func deliveryRows(deliveries []api.WebhookDelivery) [][]string {
	rows := make([][]string, 0, len(deliveries))
	for _, d := range deliveries {
		code := ""
		if d.LastResponseCode != 0 {
			code = strconv.Itoa(d.LastResponseCode)
		}

		rows = append(rows, []string{d.ID, d.Type, d.Status, strconv.Itoa(d.Attempts), code, d.CreatedAt.Local().Format(time.DateTime), d.LastError})
	}

	return rows
}

func (a *app) webhookDeliveriesCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:     "deliveries [<remote>:]<deployment>",
		Aliases: []string{"list", "ls"},
		Short:   "List recent webhook deliveries, newest first",
		Args:    exactArgs(1),
	}, a.inDeployment(func(t *target) (listing, error) {
		// Not newListing: a nil answer keeps printing null in json and yaml, as it always has.
		deliveries, err := t.server.GetWebhookDeliveries(t.name)
		header := []string{"ID", "TYPE", "STATUS", "ATTEMPTS", "CODE", "CREATED", "LAST ERROR"}
		return listing{header: header, rows: deliveryRows(deliveries), data: deliveries}, err
	}))
}

func (a *app) webhookRedeliverCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver [<remote>:]<deployment> <delivery-id>",
		Short: "Send a delivery again",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			return t.server.RedeliverWebhook(t.name, args[1])
		},
	}
}

func (a *app) webhookPingCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ping [<remote>:]<deployment>",
		Short: "Send a ping event to the webhook and print its delivery id",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			id, err := t.server.PingWebhook(t.name)
			if err != nil {
				return err
			}

			_, err = fmt.Fprintln(a.stdout, id)
			return err
		},
	}
}

// shapeScaleRequestCommand is "lxd-deploy deployment shape scale-request": ask the
// governor, through the webhook, to bring a shape to a size.
func (a *app) shapeScaleRequestCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "scale-request [<remote>:]<deployment> <shape> <target>",
		Short: "Ask the deployment's governor to scale a shape (the governor decides)",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := validate.Name("shape", args[1])
			if err != nil {
				return err
			}

			target, err := strconv.Atoi(args[2])
			if err != nil || target < 0 {
				return fmt.Errorf("target %q must be a whole number of instances", args[2])
			}

			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			id, err := t.server.RequestShapeScale(t.name, args[1], api.DeploymentShapeScaleRequest{Target: target, Reason: reason})
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Scale request %s queued for the governor\n", id)
			return err
		},
	}

	cmd.Flags().StringVar(&reason, "reason", "", "why, for the governor's logs")
	return cmd
}
