// Package response is the one way lxd-deployd answers a request: LXD's envelope, written by
// Render. Handlers return a Response and never touch the http.ResponseWriter.
package response

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Response is an answer to a request, written in LXD's envelope.
type Response interface {
	Render(w http.ResponseWriter) error
}

type syncResponse struct {
	status   int
	metadata any
	etag     string
	location string
}

// SyncResponse answers 200 with metadata.
func SyncResponse(metadata any) Response {
	return &syncResponse{status: http.StatusOK, metadata: metadata}
}

// SyncResponseETag answers 200 with metadata and an ETag computed from etagSource, so
// that a client can send it back in If-Match to detect a lost update.
func SyncResponseETag(metadata any, etagSource any) Response {
	return &syncResponse{status: http.StatusOK, metadata: metadata, etag: ETag(etagSource)}
}

// SyncResponseLocation answers 201 Created with the URL of what was created.
func SyncResponseLocation(metadata any, location string) Response {
	return &syncResponse{status: http.StatusCreated, metadata: metadata, location: location}
}

// EmptySyncResponse answers 200 with no metadata.
func EmptySyncResponse() Response {
	return SyncResponse(nil)
}

func (r *syncResponse) Render(w http.ResponseWriter) error {
	if r.etag != "" {
		w.Header().Set("ETag", fmt.Sprintf("%q", r.etag))
	}

	if r.location != "" {
		w.Header().Set("Location", r.location)
	}

	return writeJSON(w, r.status, lxdapi.ResponseRaw{
		Type:       lxdapi.SyncResponse,
		Status:     lxdapi.Success.String(),
		StatusCode: int(lxdapi.Success),
		Metadata:   r.metadata,
	})
}

type errorResponse struct {
	status   int
	msg      string
	metadata any
}

// MetadataError is an error whose answer carries metadata beside its message, as LXD's
// error envelope allows: details a client can use, such as every problem of a templated
// config (api.DeploymentTemplateError).
type MetadataError struct {
	// Status is the HTTP status of the answer.
	Status int

	// Err is the error; its message is the answer's.
	Err error

	// Metadata goes in the envelope's metadata.
	Metadata any
}

func (e *MetadataError) Error() string {
	return e.Err.Error()
}

// Unwrap gives the error.
func (e *MetadataError) Unwrap() error {
	return e.Err
}

// ErrorResponse answers with an HTTP error status and message.
func ErrorResponse(status int, msg string) Response {
	return &errorResponse{status: status, msg: msg}
}

// BadRequest answers 400.
func BadRequest(err error) Response {
	return ErrorResponse(http.StatusBadRequest, err.Error())
}

// Forbidden answers 403.
func Forbidden(err error) Response {
	return ErrorResponse(http.StatusForbidden, err.Error())
}

// NotFound answers 404.
func NotFound(err error) Response {
	return ErrorResponse(http.StatusNotFound, err.Error())
}

// InternalError answers 500.
func InternalError(err error) Response {
	return ErrorResponse(http.StatusInternalServerError, err.Error())
}

func (r *errorResponse) Render(w http.ResponseWriter) error {
	return writeJSON(w, r.status, lxdapi.ResponseRaw{
		Type:     lxdapi.ErrorResponse,
		Code:     r.status,
		Error:    r.msg,
		Metadata: r.metadata,
	})
}

// SmartError maps an error to the right response, once for every handler: StatusErrors
// keep their status, a missing row is a 404, an oversize body a 413, a cancelled request a
// 499-like 503, anything else a 500.
func SmartError(err error) Response {
	if err == nil {
		return EmptySyncResponse()
	}

	var withMetadata *MetadataError
	if errors.As(err, &withMetadata) {
		return &errorResponse{status: withMetadata.Status, msg: err.Error(), metadata: withMetadata.Metadata}
	}

	status, ok := lxdapi.StatusErrorMatch(err)
	if ok {
		return ErrorResponse(status, err.Error())
	}

	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return ErrorResponse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than the limit of %d bytes", maxBytes.Limit))
	case errors.Is(err, sql.ErrNoRows):
		return ErrorResponse(http.StatusNotFound, "not found")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrorResponse(http.StatusServiceUnavailable, err.Error())
	}

	return InternalError(err)
}

// writeJSON encodes into a buffer first, so that an encoding failure still produces a clean
// error answer instead of half a body.
func writeJSON(w http.ResponseWriter, status int, body any) error {
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(body)
	if err != nil {
		slog.Error("encode response", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(lxdapi.ResponseRaw{Type: lxdapi.ErrorResponse, Code: status, Error: "failed to encode response"})
	}

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(buf.Bytes())
	return err
}
