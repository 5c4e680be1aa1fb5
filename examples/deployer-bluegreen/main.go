// Command deployer-bluegreen is an example deployer for the custom rollout strategy
// (doc/rollouts.md#custom): a blue/green rollout. It launches a full set of "green"
// instances at the rollout's revision beside the running "blue" ones, waits until every
// green one runs, then deletes the blue ones. It acts through the governor API with the
// credential the rollout hands it, so the shape's bounds hold: a shape whose
// scaling_maximum leaves no room for a second set refuses the launches (409), and the
// deployer fails the rollout (with auto_revert, the shape goes back).
//
// Build it statically and put it in a deployer image at /usr/local/bin/deployer:
//
//	CGO_ENABLED=0 go build -o deployer ./examples/deployer-bluegreen
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
)

func main() {
	wait := flag.Duration("wait", 5*time.Minute, "how long the green instances may take to run")
	flag.Parse()
	err := run(*wait)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(wait time.Duration) error {
	in, c, err := client.LoadDeployer("")
	if err != nil {
		return err
	}

	fmt.Printf("blue/green: %s/%s rollout %d to revision %d\n", in.Deployment, in.Shape, in.Rollout, in.Revision)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	instances, err := c.GetDeploymentShapeInstances(in.Deployment, in.Shape)
	if err != nil {
		return err
	}

	var blue, green []string
	for _, i := range instances {
		if i.Revision == in.Revision && !i.Outdated {
			green = append(green, i.Name)
		} else {
			blue = append(blue, i.Name)
		}
	}

	sort.Strings(blue)

	// Green: as many instances at the new revision as there are in all, beside blue.
	size := len(instances)
	var ops []*client.Operation
	for i := len(green); i < size; i++ {
		name := fmt.Sprintf("%s-g%d-%d", in.Shape, in.Rollout, i)
		op, err := c.CreateDeploymentShapeInstance(in.Deployment, in.Shape, name)
		if err != nil {
			return fmt.Errorf("launch green %s: %w", name, err)
		}

		fmt.Println("launched green", name)
		ops = append(ops, op)
		green = append(green, name)
	}

	for _, op := range ops {
		err = op.Wait(ctx)
		if err != nil {
			return fmt.Errorf("green instance did not start: %w", err)
		}
	}

	// Every green instance must run before blue goes.
	for _, name := range green {
		instance, err := c.GetDeploymentShapeInstance(in.Deployment, in.Shape, name)
		if err != nil {
			return err
		}

		if instance.Status != "Running" {
			return fmt.Errorf("green %s is %s, not Running: blue stays", name, instance.Status)
		}
	}

	fmt.Println("green is up: switching over")
	for _, name := range blue {
		op, err := c.DeleteDeploymentShapeInstance(in.Deployment, in.Shape, name)
		if err != nil {
			return fmt.Errorf("delete blue %s: %w", name, err)
		}

		err = op.Wait(ctx)
		if err != nil {
			return fmt.Errorf("delete blue %s: %w", name, err)
		}

		fmt.Println("deleted blue", name)
	}

	fmt.Printf("blue/green done: %d green, %d blue deleted\n", len(green), len(blue))
	return nil
}
