package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// maxBodySize caps request bodies; larger ones get a 413.
const maxBodySize = 1 << 20

// ReadBody reads a request body of at most maxBodySize bytes; a larger one is an
// *http.MaxBytesError, which SmartError answers with a 413.
func ReadBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodySize))
	if err != nil {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			return nil, err
		}

		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "read request body: %v", err)
	}

	return body, nil
}

// UnmarshalBody decodes a JSON body into v, refusing unknown fields: a misspelt field would
// otherwise be silently ignored. Decoding onto a filled v merges into it, which is what
// PATCH wants (maps gain keys, absent fields keep their value).
func UnmarshalBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "request body is empty: send a JSON object")
	}

	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	err := decoder.Decode(v)
	if err != nil {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "invalid request body: %v", err)
	}

	// One JSON value and nothing after it: trailing data is a client bug (or a smuggling
	// attempt) that must not pass as if the first value were the whole request.
	_, err = decoder.Token()
	if err != io.EOF {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "invalid request body: data after the JSON value: send exactly one JSON object")
	}

	return nil
}

// PatchBase returns a deep copy of a resource's writable fields for a PATCH body to decode
// onto. Decoding merges into maps and through pointers, so decoding onto the fields read
// from the database (or a shallow copy of them) would change the "before" the handler
// compares against: a PATCH of instance_template.config or health.command would then look
// like no change and make no revision. The copy is a JSON round trip, the same encoding the
// records and the revision diff use, so it holds exactly what a client could have sent.
func PatchBase[T any](current T) (T, error) {
	var base T
	data, err := json.Marshal(current)
	if err != nil {
		return base, fmt.Errorf("copy the current fields for the patch: %w", err)
	}

	err = json.Unmarshal(data, &base)
	if err != nil {
		return base, fmt.Errorf("copy the current fields for the patch: %w", err)
	}

	return base, nil
}

// DecodeBody reads and decodes a JSON request body into v.
func DecodeBody(r *http.Request, v any) error {
	body, err := ReadBody(r)
	if err != nil {
		return err
	}

	return UnmarshalBody(body, v)
}

// DecodeOptionalBody is DecodeBody for requests whose body may be left out: an empty body
// leaves v as it is (its zero value, the defaults), a given one must decode cleanly.
func DecodeOptionalBody(r *http.Request, v any) error {
	body, err := ReadBody(r)
	if err != nil || len(body) == 0 {
		return err
	}

	return UnmarshalBody(body, v)
}

// PathName returns the unescaped path variable and checks it with the one name rule, since
// gorilla/mux hands out escaped segments.
func PathName(r *http.Request, variable string, kind string) (string, error) {
	raw := mux.Vars(r)[variable]
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", lxdapi.StatusErrorf(http.StatusBadRequest, "%s name %q is not a valid path segment", kind, raw)
	}

	err = validate.Name(kind, name)
	if err != nil {
		// A name that cannot exist cannot be found: LXD answers 404 here too.
		return "", lxdapi.StatusErrorf(http.StatusNotFound, "%s %q not found: %v", kind, name, err)
	}

	return name, nil
}

// ProjectParam returns the LXD project the request is scoped to (?project=, default
// "default").
func ProjectParam(r *http.Request) (string, error) {
	project := r.URL.Query().Get("project")
	if project == "" {
		return api.DefaultProject, nil
	}

	err := validate.ProjectName(project)
	if err != nil {
		return "", lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
	}

	return project, nil
}

// Recursion returns the ?recursion= level (0 when absent).
func Recursion(r *http.Request) (int, error) {
	value := r.URL.Query().Get("recursion")
	if value == "" {
		return 0, nil
	}

	level, err := strconv.Atoi(value)
	if err != nil || level < 0 {
		return 0, lxdapi.StatusErrorf(http.StatusBadRequest, "recursion must be a non-negative integer, got %q", value)
	}

	return level, nil
}

// ForceParam reports whether ?force=1 (or true) was given.
func ForceParam(r *http.Request) bool {
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	return force
}

// BadRequest wraps a validation error as a 400.
func BadRequest(err error) error {
	if err == nil {
		return nil
	}

	return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
}

// Forbidden is a 403 naming what the caller lacks.
func Forbidden(format string, a ...any) error {
	return lxdapi.StatusErrorf(http.StatusForbidden, format, a...)
}

// NotFoundf is a 404.
func NotFoundf(format string, a ...any) error {
	return lxdapi.StatusErrorf(http.StatusNotFound, format, a...)
}
