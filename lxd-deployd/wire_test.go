package main

import (
	"reflect"
	"testing"
)

// TestNewDaemonBuildsEveryPart: newDaemon leaves nothing to be set later. Every pointer,
// map, channel, func, interface and slice field of the daemon is set when it returns, but
// the servers start listens with, and quit (given by run; none in tests).
func TestNewDaemonBuildsEveryPart(t *testing.T) {
	d := newTestAPI(t).daemon
	v := reflect.ValueOf(d).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "servers" || name == "quit" {
			continue
		}

		field := v.Field(i)
		switch field.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.Slice:
			if field.IsNil() {
				t.Errorf("newDaemon left daemon.%s nil", name)
			}
		}
	}
}
