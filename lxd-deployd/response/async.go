package response

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"
)

type asyncResponse struct {
	url      string
	metadata any
}

// AsyncResponse answers 202 with the URL of a background operation, as LXD does.
func AsyncResponse(operationURL string, operation any) Response {
	return &asyncResponse{url: operationURL, metadata: operation}
}

func (r *asyncResponse) Render(w http.ResponseWriter) error {
	w.Header().Set("Location", r.url)
	return writeJSON(w, http.StatusAccepted, lxdapi.ResponseRaw{
		Type:       lxdapi.AsyncResponse,
		Status:     lxdapi.OperationCreated.String(),
		StatusCode: int(lxdapi.OperationCreated),
		Operation:  r.url,
		Metadata:   r.metadata,
	})
}

type manualResponse func(w http.ResponseWriter) error

// ManualResponse hands the connection to f, for the few answers that are not an envelope
// (the events websocket).
func ManualResponse(f func(w http.ResponseWriter) error) Response {
	return manualResponse(f)
}

func (f manualResponse) Render(w http.ResponseWriter) error {
	return f(w)
}
