package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v2"
)

// The output formats of every list command.
const (
	formatTable   = "table"
	formatCompact = "compact"
	formatCSV     = "csv"
	formatJSON    = "json"
	formatYAML    = "yaml"
)

var formats = []string{formatTable, formatCompact, formatCSV, formatJSON, formatYAML}

// listing is what a list command shows: a table (header and rows of cells) for the table,
// compact and csv formats, and the full objects (data) for json and yaml.
type listing struct {
	header []string
	rows   [][]string
	data   any

	// notes follow a table (not the machine formats): what the rows alone do not say.
	notes []string
}

// addFormatFlag adds --format (-f) to a list command.
func addFormatFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "format", "f", formatTable, "output format ("+strings.Join(formats, ", ")+")")
}

// checkFormat refuses an unknown format before anything is asked of the server.
func checkFormat(format string) error {
	for _, known := range formats {
		if format == known {
			return nil
		}
	}

	return fmt.Errorf("format %q is not known: use one of %s", format, strings.Join(formats, ", "))
}

// render writes the listing in a format.
func (l listing) render(w io.Writer, format string) error {
	switch format {
	case formatTable:
		err := writeTable(w, l.header, l.rows)
		for _, note := range l.notes {
			if err == nil {
				_, err = fmt.Fprintln(w, note)
			}
		}

		return err
	case formatCompact:
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(l.header, "\t"))
		for _, row := range l.rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}

		return tw.Flush()
	case formatCSV:
		// No header line, as lxc does, so that scripts read rows only.
		cw := csv.NewWriter(w)
		err := cw.WriteAll(l.rows)
		if err != nil {
			return err
		}

		return cw.Error()
	case formatJSON:
		data, err := json.Marshal(l.data)
		if err != nil {
			return err
		}

		_, err = fmt.Fprintln(w, string(data))
		return err
	case formatYAML:
		return writeYAML(w, l.data)
	}

	return checkFormat(format)
}

// writeTable draws an lxc-style table:
//
//	+------+-------------+
//	| NAME | DESCRIPTION |
//	+------+-------------+
//	| dep1 | My app      |
//	+------+-------------+
func writeTable(w io.Writer, header []string, rows [][]string) error {
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, rows...) {
		for i, cell := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], cellWidth(cell))
			}
		}
	}

	var b strings.Builder
	line := func() {
		for _, width := range widths {
			b.WriteString("+" + strings.Repeat("-", width+2))
		}

		b.WriteString("+\n")
	}

	// A cell with several lines (a multi-line description) becomes several table lines.
	writeRow := func(row []string) {
		lines := 1
		for _, cell := range row {
			lines = max(lines, strings.Count(cell, "\n")+1)
		}

		for l := 0; l < lines; l++ {
			for i, width := range widths {
				text := ""
				if i < len(row) {
					parts := strings.Split(row[i], "\n")
					if l < len(parts) {
						text = parts[l]
					}
				}

				b.WriteString("| " + text + strings.Repeat(" ", width-utf8.RuneCountInString(text)) + " ")
			}

			b.WriteString("|\n")
		}

		line()
	}

	line()
	writeRow(header)
	for _, row := range rows {
		writeRow(row)
	}

	_, err := io.WriteString(w, b.String())
	return err
}

// cellWidth is the width of the widest line of a cell.
func cellWidth(cell string) int {
	width := 0
	for _, part := range strings.Split(cell, "\n") {
		width = max(width, utf8.RuneCountInString(part))
	}

	return width
}

// writeYAML writes an object as YAML (show commands, --format yaml).
func writeYAML(w io.Writer, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}

	_, err = w.Write(data)
	return err
}

// shortFingerprint is the first 12 characters of a fingerprint, as lxc shows them.
func shortFingerprint(fingerprint string) string {
	if len(fingerprint) > 12 {
		return fingerprint[:12]
	}

	return fingerprint
}
