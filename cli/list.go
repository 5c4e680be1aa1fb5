package main

import (
	"github.com/spf13/cobra"
)

// listCommand completes a list command (its use, short help and args set by the caller):
// it adds --format, refuses an unknown format before list asks anything of the server,
// and renders what list returns. Every list command goes through here so that they all
// take the same flag and fail the same way.
func (a *app) listCommand(cmd *cobra.Command, list func(args []string) (listing, error)) *cobra.Command {
	var format string
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := checkFormat(format)
		if err != nil {
			return err
		}

		l, err := list(args)
		if err != nil {
			return err
		}

		return l.render(a.stdout, format)
	}

	addFormatFlag(cmd, &format)
	return cmd
}

// newListing is the listing of items read from the server, with rows made by rows. No
// items list as [] in json and yaml, not null, so scripts can always iterate. It is
// meant to be returned together with the error of the read, which wins when not nil.
func newListing[T any](header []string, items []T, rows func([]T) [][]string) listing {
	if items == nil {
		items = []T{}
	}

	return listing{header: header, rows: rows(items), data: items}
}

// inDeployment is the list of a list command whose one argument is
// "[<remote>:]<deployment>": it connects to that deployment's remote and lists with list.
func (a *app) inDeployment(list func(t *target) (listing, error)) func(args []string) (listing, error) {
	return func(args []string) (listing, error) {
		t, err := a.connectArg(args[0], "deployment")
		if err != nil {
			return listing{}, err
		}

		return list(t)
	}
}
