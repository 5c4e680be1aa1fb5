package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// notesParam returns the ?notes= of a shape change, or a 400 when it passes
// validate.MaxNotesLength (notes are copied into revisions, rollouts and activity).
func notesParam(r *http.Request) (string, error) {
	notes := r.URL.Query().Get("notes")
	return notes, rest.BadRequest(validate.Notes(notes))
}
