package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// governorHold keeps "governor run" the one active governor of its deployment (seed 004's
// review): it registers at start, renews at a third of its ttl, and releases when it
// stops. Losing the hold (another governor took over) stops it: two governors acting on
// one deployment is what the hold exists to prevent.
type governorHold struct {
	server     *client.Server
	deployment string
	name       string
	ttl        time.Duration
	log        *slog.Logger
}

// defaultGovernorName is the name a governor registers under without --name: the host
// name, which tells the operator where it runs.
func defaultGovernorName() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "governor"
	}

	return name
}

// put registers or renews.
func (h *governorHold) put(takeover bool) (*api.DeploymentGovernor, error) {
	return h.server.HoldDeploymentGovernor(h.deployment, api.DeploymentGovernorPut{Name: h.name, TTL: int(h.ttl / time.Second), Takeover: takeover})
}

// register takes the deployment, or says who has it.
func (h *governorHold) register(takeover bool) error {
	held, err := h.put(takeover)
	if err != nil {
		return fmt.Errorf("cannot become the governor of deployment %s: %w", h.deployment, err)
	}

	h.log.Info("holding the deployment as its active governor", "governor", held.Name, "key", held.Key, "since", held.Since.Format(time.RFC3339), "ttl", h.ttl, "takeover", takeover)
	return nil
}

// keep renews the hold until ctx ends, and calls lost (once) if another governor has it.
// Other errors (the server briefly unreachable) are logged and retried: if they last, the
// hold expires and the next renewal finds out whether someone else took it.
func (h *governorHold) keep(ctx context.Context, lost func(error)) {
	ticker := time.NewTicker(h.ttl / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}

		_, err := h.put(false)
		if lxdapi.StatusErrorCheck(err, http.StatusConflict) {
			lost(fmt.Errorf("lost deployment %s to another governor: %w", h.deployment, err))
			return
		}

		if err != nil {
			h.log.Warn("could not renew the hold on the deployment", "err", err)
		}
	}
}

// release ends the hold, so that another governor may start at once.
func (h *governorHold) release() {
	err := h.server.ReleaseDeploymentGovernor(h.deployment, h.name)
	if err != nil {
		h.log.Warn("could not release the hold on the deployment: it ends with its ttl", "err", err)
	}
}

// deploymentGovernorCommand is "lxd-deploy deployment governor": which governor is the
// deployment's active one, and an admin's way to end its hold.
func (a *app) deploymentGovernorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "governor",
		Short: "Show or release the deployment's active governor",
		Args:  cobra.NoArgs,
		RunE:  showHelp,
	}

	show := &cobra.Command{
		Use:   "show [<remote>:]<deployment>",
		Short: "Show which governor holds the deployment, and since when (name empty: none)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			governor, err := t.server.GetDeploymentGovernor(t.name)
			if err != nil {
				return err
			}

			return writeYAML(a.stdout, governor)
		},
	}

	release := &cobra.Command{
		Use:   "release [<remote>:]<deployment>",
		Short: "End the active governor's hold, so that another may register (admins: anyone's)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.connectArg(args[0], "deployment")
			if err != nil {
				return err
			}

			err = t.server.ReleaseDeploymentGovernor(t.name, "")
			if err != nil {
				return err
			}

			_, err = fmt.Fprintf(a.stdout, "Governor of deployment %s released\n", t.name)
			return err
		},
	}

	cmd.AddCommand(show, release)
	return cmd
}
