package reporter

// Event is a lifecycle event ready to send: the action, the project and URL of what it is
// about, and what else the action tells (nil: nothing).
type Event struct {
	Action  string
	Project string
	Source  string
	Context map[string]any
}
