package main

import (
	"bytes"
	"strings"
	"testing"
)

func testListing() listing {
	type item struct {
		Name string `json:"name" yaml:"name"`
	}

	return listing{
		header: []string{"NAME", "DESCRIPTION"},
		rows:   [][]string{{"dep1", "My app"}, {"dep-two", "a, \"quoted\"\nsecond line"}},
		data:   []item{{Name: "dep1"}, {Name: "dep-two"}},
	}
}

func TestRenderTable(t *testing.T) {
	var out bytes.Buffer
	err := testListing().render(&out, formatTable)
	if err != nil {
		t.Fatal(err)
	}

	expected := strings.Join([]string{
		"+---------+-------------+",
		"| NAME    | DESCRIPTION |",
		"+---------+-------------+",
		"| dep1    | My app      |",
		"+---------+-------------+",
		"| dep-two | a, \"quoted\" |",
		"|         | second line |",
		"+---------+-------------+",
		"",
	}, "\n")
	if out.String() != expected {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), expected)
	}
}

func TestRenderTableEmptyAndUnicode(t *testing.T) {
	var out bytes.Buffer
	err := listing{header: []string{"NAME"}, rows: [][]string{{"héllo"}}}.render(&out, formatTable)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(out.String(), "| héllo |\n") || !strings.HasPrefix(out.String(), "+-------+\n") {
		t.Fatalf("unicode cell misaligned:\n%s", out.String())
	}

	out.Reset()
	err = listing{header: []string{"NAME", "X"}}.render(&out, formatTable)
	if err != nil {
		t.Fatal(err)
	}

	if out.String() != "+------+---+\n| NAME | X |\n+------+---+\n" {
		t.Fatalf("empty table:\n%s", out.String())
	}
}

func TestRenderOtherFormats(t *testing.T) {
	tests := map[string]string{
		formatCSV:     "dep1,My app\ndep-two,\"a, \"\"quoted\"\"\nsecond line\"\n",
		formatJSON:    `[{"name":"dep1"},{"name":"dep-two"}]` + "\n",
		formatYAML:    "- name: dep1\n- name: dep-two\n",
		formatCompact: "NAME     DESCRIPTION\ndep1     My app\n",
	}

	for format, want := range tests {
		var out bytes.Buffer
		err := testListing().render(&out, format)
		if err != nil {
			t.Fatal(err)
		}

		if !strings.HasPrefix(out.String(), want) {
			t.Errorf("%s:\n%q\nwant prefix:\n%q", format, out.String(), want)
		}
	}
}

func TestCheckFormat(t *testing.T) {
	for _, format := range formats {
		if err := checkFormat(format); err != nil {
			t.Errorf("%s: %v", format, err)
		}
	}

	err := checkFormat("xml")
	if err == nil || !strings.Contains(err.Error(), "table, compact, csv, json, yaml") {
		t.Errorf("xml: %v", err)
	}

	err = testListing().render(&bytes.Buffer{}, "xml")
	if err == nil {
		t.Error("render accepted an unknown format")
	}
}

func TestShortFingerprint(t *testing.T) {
	if got := shortFingerprint("0123456789abcdef"); got != "0123456789ab" {
		t.Errorf("got %q", got)
	}

	if got := shortFingerprint("abc"); got != "abc" {
		t.Errorf("got %q", got)
	}
}
