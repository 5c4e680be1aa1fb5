// Package registry finds, versions and fetches templates kept in template registries (seed
// 001): a registry is an HTTP base URL or a local directory laid out as
//
//	[<collection>/]<template>/<version>/<template>.<py|jinja|star>[.schema] + helper files
//
// and a template in it is named by a short reference
// "github.com/<owner>/<repo>[/<collection>]/<template>:<version>". Plain http(s) URLs to a
// template file are fetched the way Deployment Manager did: the file, its ".schema", and
// the files the schema imports.
//
// The package only fetches; it never runs a template. The expander (package templates)
// decides which types are templates and asks a Fetcher for the ones it was not given.
package registry

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Reference is a parsed registry-based template reference.
type Reference struct {
	// Registry is "<host>/<owner>/<repo>", or "" for a short reference ("<template>:<version>")
	// that resolves against the default registry.
	Registry string

	// Collection is the optional collection directory ("" is the registry's root collection).
	Collection string

	// Template is the template's directory name, also the base name of its file.
	Template string

	// Version is the requested version as written ("v1", "v1.1", "v1.1.0").
	Version string
}

// segment is one path segment of a reference: no slash, no colon, not "." or "..".
const segment = `[A-Za-z0-9_][A-Za-z0-9._-]*`

var referencePattern = regexp.MustCompile(
	`^(?:(` + segment + `\.` + segment + `/` + segment + `/` + segment + `)/(?:(` + segment + `)/)?)?(` + segment + `):(v[0-9]+(?:\.[0-9]+){0,2})$`)

// IsReference says whether typ has the syntax of a registry reference. Types without a
// ":v<version>" suffix (Kubernetes kinds, "shape", file names) are never references.
func IsReference(typ string) bool {
	return referencePattern.MatchString(typ)
}

// ParseReference parses "<host>/<owner>/<repo>[/<collection>]/<template>:<version>" or the
// short "<template>:<version>".
func ParseReference(typ string) (Reference, error) {
	m := referencePattern.FindStringSubmatch(typ)
	if m == nil {
		return Reference{}, fmt.Errorf("%q is not a template reference: write <host>/<owner>/<repo>[/<collection>]/<template>:<version>, e.g. github.com/acme/templates/web:v1", typ)
	}

	return Reference{Registry: m[1], Collection: m[2], Template: m[3], Version: m[4]}, nil
}

// String gives the reference back in its written form.
func (r Reference) String() string {
	parts := []string{}
	if r.Registry != "" {
		parts = append(parts, r.Registry)
	}

	if r.Collection != "" {
		parts = append(parts, r.Collection)
	}

	return strings.Join(append(parts, r.Template), "/") + ":" + r.Version
}

// IsURL says whether typ is a plain http(s) URL to a template file.
func IsURL(typ string) bool {
	return strings.HasPrefix(typ, "https://") || strings.HasPrefix(typ, "http://")
}

// Prefix is the key prefix under which the files of the template typ are kept in an
// expansion's imports, so that a CLI can embed what it fetched and a daemon can expand it
// without fetching again:
//
//   - a URL keeps its files next to it: "https://h/p/t.py" -> "https://h/p/" (so the
//     template itself is imported under its own URL, its schema under URL+".schema");
//   - a reference keeps them under itself: "github.com/o/r/t:v1" -> "github.com/o/r/t:v1/".
//
// Any other type has no prefix ("").
func Prefix(typ string) string {
	switch {
	case IsURL(typ):
		return typ[:strings.LastIndex(typ, "/")+1]
	case IsReference(typ):
		return typ + "/"
	}

	return ""
}

// TemplateExtensions are the template languages, in the order a reference's template file
// is looked for in a version directory.
var TemplateExtensions = []string{".py", ".jinja", ".star"}

// IsTemplateFile says whether name has a template language's extension.
func IsTemplateFile(name string) bool {
	ext := path.Ext(name)
	for _, e := range TemplateExtensions {
		if ext == e {
			return true
		}
	}

	return false
}
