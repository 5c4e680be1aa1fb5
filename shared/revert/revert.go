// Package revert undoes work that spans systems (a database row, an LXD instance, a socket)
// when a later step fails, as canonical/lxd's shared/revert does: each step registers its
// undo as soon as it is done, a deferred Fail runs them newest first, and Success at the
// end keeps everything. Written once here so that no caller spells its undo out by hand on
// every error path, and none forgets one.
package revert

// Reverter holds the undo of each step done so far. The zero value is ready to use; a
// Reverter is not safe for concurrent use.
type Reverter struct {
	undo []func()
}

// New returns an empty Reverter.
func New() *Reverter {
	return &Reverter{}
}

// Add registers the undo of a step just done.
func (r *Reverter) Add(undo func()) {
	r.undo = append(r.undo, undo)
}

// Fail runs the registered undos, newest first (a later step may depend on an earlier one),
// and forgets them, so a second Fail (a deferred one after an explicit one) does nothing.
// After Success it does nothing. A nil Reverter has nothing to undo.
func (r *Reverter) Fail() {
	if r == nil {
		return
	}

	undo := r.undo
	r.undo = nil
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
}

// Success forgets the registered undos: the work is kept.
func (r *Reverter) Success() {
	r.undo = nil
}

// Clone returns a Reverter holding the undos registered so far, for work that outlives the
// function that did its first steps: the caller hands the clone on (to finish or give up
// the work later) and calls Success on its own.
func (r *Reverter) Clone() *Reverter {
	return &Reverter{undo: append([]func(){}, r.undo...)}
}
