package main

import "reflect"

// keepUnsetLists gives back to edited the lists original left unset (nil) that came
// back from the YAML empty. yaml.v2 writes a nil list as [], so a field nobody touched
// would return as "an empty list": for LXD that can mean something else (no profiles at
// all instead of the default profile), and for the revision diff it is a change, which
// turned every untouched instance outdated after an edit. Both must point at the same
// type. The cost: an edit cannot turn an unset list into an explicitly empty one (PUT or
// PATCH can).
func keepUnsetLists(original any, edited any) {
	keepUnset(reflect.ValueOf(original).Elem(), reflect.ValueOf(edited).Elem())
}

func keepUnset(original reflect.Value, edited reflect.Value) {
	switch original.Kind() {
	case reflect.Struct:
		for i := 0; i < original.NumField(); i++ {
			if edited.Field(i).CanSet() {
				keepUnset(original.Field(i), edited.Field(i))
			}
		}
	case reflect.Pointer:
		if !original.IsNil() && !edited.IsNil() {
			keepUnset(original.Elem(), edited.Elem())
		}
	case reflect.Slice:
		if original.IsNil() && !edited.IsNil() && edited.Len() == 0 {
			edited.Set(reflect.Zero(edited.Type()))
		}
	}
}
