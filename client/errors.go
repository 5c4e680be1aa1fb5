package client

import (
	"bytes"
	"encoding/json"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TemplateError is the answer to a templated config that does not expand: the daemon's
// one-line message, and every problem and warning from the answer's metadata. It unwraps
// to the lxdapi.StatusError of the answer, so status checks work on it as on any error.
type TemplateError struct {
	// Status is the HTTP status of the answer (400).
	Status int

	// Message is the answer's error message, a summary of the problems.
	Message string

	// Details are the problems and warnings.
	Details api.DeploymentTemplateError
}

// Error gives the daemon's message.
func (e *TemplateError) Error() string {
	return e.Message
}

// Unwrap gives the status error of the answer.
func (e *TemplateError) Unwrap() error {
	return lxdapi.NewStatusError(e.Status, e.Message)
}

// Detail is the message and, when there are several problems, each on a line of its own.
func (e *TemplateError) Detail() string {
	text := e.Message
	if len(e.Details.Problems) > 1 {
		for _, p := range e.Details.Problems {
			text += "\n  " + p.String()
		}
	}

	return text
}

// errorFromEnvelope turns an error answer into an error: a *TemplateError when its
// metadata lists a templated config's problems, else an lxdapi.StatusError.
func errorFromEnvelope(status int, envelope *lxdapi.Response) error {
	metadata := bytes.TrimSpace(envelope.Metadata)
	if len(metadata) > 0 && !bytes.Equal(metadata, []byte("null")) {
		var details api.DeploymentTemplateError
		err := json.Unmarshal(metadata, &details)
		if err == nil && len(details.Problems) > 0 {
			return &TemplateError{Status: status, Message: envelope.Error, Details: details}
		}
	}

	return lxdapi.NewStatusError(status, envelope.Error)
}
