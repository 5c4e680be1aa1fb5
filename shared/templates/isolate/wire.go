package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// The protocol between parent and child: one JSON value per message, each way.
//
//	parent -> child: request, then a fetchReply for each fetch the child asks for
//	child -> parent: any number of {"fetch": TYPE}, then one {"result": ...} or {"error": ...}
//
// Fetching stays in the parent, so the child needs no network and no registry
// configuration, and the parent's fetcher (with its registry policy) is the only one.

// request is what the child expands.
type request struct {
	Config  []byte            `json:"config"`
	Imports map[string][]byte `json:"imports,omitempty"`
	Env     templates.Env     `json:"env"`
	Limits  templates.Limits  `json:"limits"`

	// StrictUndefined is Options.StrictUndefined.
	StrictUndefined bool `json:"strict_undefined,omitempty"`

	// Budget bounds the whole expansion inside the child too (the parent kills the child
	// at the same budget, so a template stuck in a builtin cannot outlive it).
	Budget time.Duration `json:"budget"`

	// Fetch says whether the parent has a fetcher: without one, fetching is an error in
	// the child exactly as with a nil Options.Fetch.
	Fetch bool `json:"fetch,omitempty"`
}

// message is what the child sends.
type message struct {
	Fetch  string     `json:"fetch,omitempty"`
	Result *result    `json:"result,omitempty"`
	Error  *wireError `json:"error,omitempty"`
}

// result is an Expansion with the fields JSON leaves out of it.
type result struct {
	Expansion *templates.Expansion `json:"expansion"`
	Fetched   map[string][]byte    `json:"fetched,omitempty"`
	Stats     Stats                `json:"stats"`
}

// Stats are a child's memory figures, for benchmarks and the documentation of the limit.
type Stats struct {
	// Baseline is the address space the child had mapped before it read its request.
	Baseline int64 `json:"baseline"`

	// MaxRSS is the child's peak resident memory.
	MaxRSS int64 `json:"max_rss"`
}

// fetchReply answers one fetch.
type fetchReply struct {
	Bundle *registry.Bundle `json:"bundle,omitempty"`
	Error  *wireError       `json:"error,omitempty"`
}

// wireError carries an error across the process boundary with its structure: an
// ExpandError keeps where it happened and whether it is a limit. Problems and Warnings are
// passed through untouched, so structured detail added to expansion errors reaches the
// caller as the engine produced it.
type wireError struct {
	// Expand is true for a *templates.ExpandError (false: a plain error, e.g. a fetch).
	Expand   bool   `json:"expand,omitempty"`
	Template string `json:"template,omitempty"`
	Resource string `json:"resource,omitempty"`
	Path     string `json:"path,omitempty"`
	Msg      string `json:"msg"`

	// Limit is true when the error wraps templates.ErrLimit.
	Limit bool `json:"limit,omitempty"`

	// Problems and Warnings hold structured detail of the error, as JSON.
	Problems json.RawMessage `json:"problems,omitempty"`
	Warnings json.RawMessage `json:"warnings,omitempty"`
}

// limitCause is the cause of a limit error decoded in the parent: it is templates.ErrLimit
// for errors.Is and keeps no text of its own.
type limitCause struct{}

func (limitCause) Error() string { return templates.ErrLimit.Error() }

func (limitCause) Is(target error) bool { return target == templates.ErrLimit }

// encodeError turns an error into its wire form.
func encodeError(err error) *wireError {
	w := &wireError{Msg: err.Error(), Limit: errors.Is(err, templates.ErrLimit)}
	var ee *templates.ExpandError
	if errors.As(err, &ee) {
		w.Expand = true
		w.Template = ee.Template
		w.Resource = ee.Resource
		w.Path = ee.Path
		w.Msg = ee.Msg
		w.Limit = errors.Is(ee, templates.ErrLimit)
		w.Problems, w.Warnings = structuredDetail(ee)
	}

	return w
}

// structuredDetail marshals the error and keeps its "problems" and "warnings", when the
// engine's error type has them; today's ExpandError has neither, and both stay empty.
func structuredDetail(ee *templates.ExpandError) (json.RawMessage, json.RawMessage) {
	data, err := json.Marshal(ee)
	if err != nil {
		return nil, nil
	}

	var fields map[string]json.RawMessage
	err = json.Unmarshal(data, &fields)
	if err != nil {
		return nil, nil
	}

	pick := func(names ...string) json.RawMessage {
		for _, name := range names {
			v, ok := fields[name]
			if ok && string(v) != "null" {
				return v
			}
		}

		return nil
	}

	return pick("problems", "Problems"), pick("warnings", "Warnings")
}

// decode turns the wire form back into an error: an ExpandError when it was one.
func (w *wireError) decode() error {
	if !w.Expand {
		if w.Limit {
			return fmt.Errorf("%s: %w", w.Msg, limitCause{})
		}

		return errors.New(w.Msg)
	}

	ee := &templates.ExpandError{Template: w.Template, Resource: w.Resource, Path: w.Path, Msg: w.Msg}
	if w.Limit {
		ee.Err = limitCause{}
	}

	restoreDetail(ee, w.Problems, w.Warnings)
	return ee
}

// restoreDetail puts problems and warnings back into the error, when its type has fields
// for them (decoding the JSON into the error fills exactly those).
func restoreDetail(ee *templates.ExpandError, problems json.RawMessage, warnings json.RawMessage) {
	if len(problems) == 0 && len(warnings) == 0 {
		return
	}

	fields := map[string]json.RawMessage{}
	if len(problems) > 0 {
		fields["problems"] = problems
	}

	if len(warnings) > 0 {
		fields["warnings"] = warnings
	}

	data, err := json.Marshal(fields)
	if err != nil {
		return
	}

	// Unknown fields are ignored, and known ones (Problems, Warnings) are matched case
	// insensitively, whatever their tags.
	_ = json.Unmarshal(data, ee)
}

// normalize turns the json.Numbers of a decoded document back into the engine's scalar
// types: int for whole numbers, float64 otherwise, as its YAML parser gives them.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}

		return t
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}

		return t
	case json.Number:
		i, err := t.Int64()
		if err == nil {
			return int(i)
		}

		f, err := t.Float64()
		if err == nil {
			return f
		}

		return t.String()
	}

	return v
}

// normalizeExpansion normalizes every property map of an expansion.
func normalizeExpansion(exp *templates.Expansion) {
	for i := range exp.Config.Resources {
		r := &exp.Config.Resources[i]
		if r.Properties != nil {
			r.Properties = normalize(r.Properties).(map[string]any)
		}
	}

	var walk func([]templates.LayoutResource)
	walk = func(rs []templates.LayoutResource) {
		for i := range rs {
			if rs[i].Properties != nil {
				rs[i].Properties = normalize(rs[i].Properties).(map[string]any)
			}

			walk(rs[i].Resources)
		}
	}

	walk(exp.Layout.Resources)
}
