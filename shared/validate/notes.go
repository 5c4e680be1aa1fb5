package validate

import "fmt"

// MaxNotesLength is the most bytes of notes a change may carry: notes are copied into the
// revision, the rollout and the activity entry it makes, so the cap bounds all three.
const MaxNotesLength = 4096

// Notes checks the free text given with a change (?notes= or a notes field).
func Notes(notes string) error {
	if len(notes) > MaxNotesLength {
		return fmt.Errorf("notes are %d bytes, more than the %d allowed: shorten them, and keep long explanations elsewhere (a link fits)", len(notes), MaxNotesLength)
	}

	return nil
}
