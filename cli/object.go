package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// object says how show, get, set and unset reach one kind of object (a deployment, a
// shape, a key) from the arguments that name it, so that those commands share one body
// and behave alike for every kind.
type object[T any] struct {
	fields configurable[T]
	names  int                             // leading arguments that name the object
	read   func(args []string) (*T, error) // connects and reads the object
	// update reads the object, applies change and writes it back with the ETag of the
	// read; nil for objects that set and unset do not reach.
	update func(args []string, change func(obj *T) error) error
}

// showCommand completes a show command: it prints the object as YAML.
func showCommand[T any](a *app, o object[T], cmd *cobra.Command) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		obj, err := o.read(args)
		if err != nil {
			return err
		}

		return writeYAML(a.stdout, obj)
	}

	return cmd
}

// getCommand completes a get command: it prints the config key, or with --property the
// property, named by the argument after the object's names.
func getCommand[T any](a *app, o object[T], cmd *cobra.Command, propertyUsage string) *cobra.Command {
	var isProperty bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		obj, err := o.read(args)
		if err != nil {
			return err
		}

		// An object with no config map (a key) has only properties: what is asked for is
		// always a property, with or without --property.
		value, err := o.fields.getValue(obj, args[o.names], isProperty || o.fields.config == nil)
		if err != nil {
			return err
		}

		_, err = fmt.Fprintln(a.stdout, value)
		return err
	}

	cmd.Flags().BoolVarP(&isProperty, "property", "p", false, propertyUsage)
	return cmd
}

// setCommand completes a set command: "<key>=<value>..." after the object's names.
func setCommand[T any](o object[T], cmd *cobra.Command, propertyUsage string) *cobra.Command {
	return changeCommand(o, cmd, propertyUsage, o.fields.applySet)
}

// unsetCommand completes an unset command: "<key>..." after the object's names.
func unsetCommand[T any](o object[T], cmd *cobra.Command, propertyUsage string) *cobra.Command {
	return changeCommand(o, cmd, propertyUsage, o.fields.applyUnset)
}

// changeCommand is set and unset: apply the arguments after the object's names to it.
func changeCommand[T any](o object[T], cmd *cobra.Command, propertyUsage string, apply func(obj *T, args []string, property bool) error) *cobra.Command {
	var isProperty bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.update(args, func(obj *T) error {
			return apply(obj, args[o.names:], isProperty)
		})
	}

	cmd.Flags().BoolVarP(&isProperty, "property", "p", false, propertyUsage)
	return cmd
}
