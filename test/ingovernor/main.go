// Command ingovernor is a minimal governor for the end-to-end tests: a static binary pushed
// into a container, which reaches lxd-deployd through /dev/lxd-deployd.sock with tokens
// signed by its deployment key pair, and launches, deletes or lists instances of a shape.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
)

func main() {
	err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run() error {
	certFile := flag.String("cert", "/gov.crt", "certificate of the deployment key")
	keyFile := flag.String("key", "/gov.key", "private key of the deployment key")
	socket := flag.String("socket", client.GovernorSocket, "governor socket")
	project := flag.String("project", "default", "LXD project")
	deploymentFlag := flag.String("deployment", "", "deployment to govern")
	deployer := flag.Bool("deployer", false, "act with the credential a custom rollout hands its deployer (client.LoadDeployer) instead of a key pair")
	flag.Parse()
	deployment := *deploymentFlag

	args := flag.Args()
	if len(args) < 2 {
		return fmt.Errorf("usage: ingovernor -deployment D launch|delete SHAPE NAME | list SHAPE | get PATH")
	}

	if *deployer {
		input, conn, err := client.LoadDeployer("")
		if err != nil {
			return err
		}

		return act(conn, input.Deployment, args)
	}

	certPEM, err := os.ReadFile(*certFile)
	if err != nil {
		return err
	}

	keyPEM, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}

	hostname, _ := os.Hostname()
	signer, err := client.NewTokenSigner(string(certPEM), string(keyPEM), *project, deployment, hostname)
	if err != nil {
		return err
	}

	c, err := client.ConnectUnix(*socket, &client.ConnectionArgs{Project: *project, TokenSource: signer.Token})
	if err != nil {
		return err
	}

	return act(c, deployment, args)
}

// act runs one command against a deployment.
func act(c *client.Server, deployment string, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch args[0] {
	case "get":
		resp, _, err := c.Query("GET", args[1], nil, "")
		if err != nil {
			return err
		}

		_, err = os.Stdout.Write(resp.Metadata)
		return err
	case "list":
		instances, err := c.GetDeploymentShapeInstances(deployment, args[1])
		if err != nil {
			return err
		}

		return json.NewEncoder(os.Stdout).Encode(instances)
	case "launch", "delete":
		if len(args) != 3 {
			return fmt.Errorf("%s needs a shape and an instance name", args[0])
		}

		op, err := c.CreateDeploymentShapeInstance(deployment, args[1], args[2])
		if args[0] == "delete" {
			op, err = c.DeleteDeploymentShapeInstance(deployment, args[1], args[2])
		}

		if err != nil {
			return err
		}

		return op.Wait(ctx)
	}

	return fmt.Errorf("unknown command %q", args[0])
}
