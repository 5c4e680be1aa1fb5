package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// property is one field of an object that get (and, unless read-only, set and unset)
// reach with --property. Unsetting sets the empty string.
type property[T any] struct {
	get func(obj *T) string
	set func(obj *T, value string) error // nil: read-only
}

// configurable describes how get, set and unset reach an object's config map and its
// properties; deployments and shapes each have one.
type configurable[T any] struct {
	kind       string                          // "deployment", "shape": for messages
	config     func(obj *T) *map[string]string // nil: the object has only properties
	properties map[string]property[T]
}

// getValue returns a config key (empty when unset, as lxc does) or, with property, a
// property.
func (c configurable[T]) getValue(obj *T, key string, property bool) (string, error) {
	if !property {
		if c.config == nil {
			return "", c.noConfig()
		}

		return (*c.config(obj))[key], nil
	}

	p, err := c.property(key)
	if err != nil {
		return "", err
	}

	return p.get(obj), nil
}

// applySet changes config keys (or properties) from "key=value" arguments.
func (c configurable[T]) applySet(obj *T, args []string, property bool) error {
	values, err := parseKeyValues(args)
	if err != nil {
		return err
	}

	if !property {
		if c.config == nil {
			return c.noConfig()
		}

		config := c.config(obj)
		*config, err = setConfig(*config, values)
		return err
	}

	for _, key := range sortedKeys(values) {
		err = c.setProperty(obj, key, values[key])
		if err != nil {
			return err
		}
	}

	return nil
}

// applyUnset removes config keys, or resets properties to their empty value.
func (c configurable[T]) applyUnset(obj *T, keys []string, property bool) error {
	if !property {
		if c.config == nil {
			return c.noConfig()
		}

		config := c.config(obj)
		updated, err := unsetConfig(*config, keys, c.kind)
		if err != nil {
			return err
		}

		*config = updated
		return nil
	}

	for _, key := range keys {
		err := c.setProperty(obj, key, "")
		if err != nil {
			return err
		}
	}

	return nil
}

func (c configurable[T]) noConfig() error {
	return fmt.Errorf("a %s has no config keys, only properties: use --property with one of %s", c.kind, strings.Join(sortedKeys(c.properties), ", "))
}

func (c configurable[T]) property(name string) (property[T], error) {
	p, ok := c.properties[name]
	if !ok {
		return property[T]{}, fmt.Errorf("%s has no property %q: use one of %s", c.kind, name, strings.Join(sortedKeys(c.properties), ", "))
	}

	return p, nil
}

func (c configurable[T]) setProperty(obj *T, name string, value string) error {
	p, err := c.property(name)
	if err != nil {
		return err
	}

	if p.set == nil {
		var writable []string
		for _, key := range sortedKeys(c.properties) {
			if c.properties[key].set != nil {
				writable = append(writable, key)
			}
		}

		return fmt.Errorf("%s property %q is read-only: the writable ones are %s", c.kind, name, strings.Join(writable, ", "))
	}

	return p.set(obj, value)
}

// parseKeyValues turns "key=value" arguments into a map. lxc's two-argument form
// "key value" is accepted too.
func parseKeyValues(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("nothing to set: give key=value pairs")
	}

	if len(args) == 2 && !strings.Contains(args[0], "=") {
		return map[string]string{args[0]: args[1]}, nil
	}

	return parsePairs(args)
}

// parsePairs turns "key=value" arguments into a map.
func parsePairs(args []string) (map[string]string, error) {
	values := make(map[string]string, len(args))
	for _, arg := range args {
		key, value, found := strings.Cut(arg, "=")
		if !found {
			return nil, fmt.Errorf("%q is not of the form key=value", arg)
		}

		if key == "" {
			return nil, fmt.Errorf("%q has no key before '='", arg)
		}

		values[key] = value
	}

	return values, nil
}

// setConfig returns a copy of config with values set; an empty value removes the key, as
// lxc does.
func setConfig(config map[string]string, values map[string]string) (map[string]string, error) {
	updated := maps.Clone(config)
	if updated == nil {
		updated = map[string]string{}
	}

	for _, key := range sortedKeys(values) {
		err := validate.ConfigKey(key)
		if err != nil {
			return nil, err
		}

		if values[key] == "" {
			delete(updated, key)
			continue
		}

		updated[key] = values[key]
	}

	return updated, nil
}

// unsetConfig returns a copy of config without keys; a key that is not set is an error
// (most likely a typo).
func unsetConfig(config map[string]string, keys []string, kind string) (map[string]string, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("nothing to unset: give the keys to remove")
	}

	updated := maps.Clone(config)
	if updated == nil {
		updated = map[string]string{}
	}

	for _, key := range keys {
		_, ok := updated[key]
		if !ok {
			return nil, fmt.Errorf("%s config key %q is not set", kind, key)
		}

		delete(updated, key)
	}

	return updated, nil
}

// stringProperty is a writable string field.
func stringProperty[T any](field func(obj *T) *string) property[T] {
	return property[T]{
		get: func(obj *T) string { return *field(obj) },
		set: func(obj *T, value string) error {
			*field(obj) = value
			return nil
		},
	}
}

// intProperty is a writable integer field; the empty string (unset) is 0.
func intProperty[T any](name string, field func(obj *T) *int) property[T] {
	return property[T]{
		get: func(obj *T) string { return strconv.Itoa(*field(obj)) },
		set: func(obj *T, value string) error {
			if value == "" {
				*field(obj) = 0
				return nil
			}

			n, err := strconv.Atoi(value)
			if err != nil {
				return fmt.Errorf("%s must be a whole number, got %q", name, value)
			}

			*field(obj) = n
			return nil
		},
	}
}

// readOnly is a field get shows but set refuses.
func readOnly[T any](get func(obj *T) string) property[T] {
	return property[T]{get: get}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}
