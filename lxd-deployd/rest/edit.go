package rest

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// EditFromBody makes the edit of a PUT (replace the writable fields with the body) or a
// PATCH (merge the body into them: it decodes onto a copy of the current fields), after
// checking the request's ETag against the current fields. The store calls it inside its
// transaction, so the ETag is checked against what the write replaces.
func EditFromBody[T any](r *http.Request, body []byte, patch bool) func(current T) (T, error) {
	return func(current T) (T, error) {
		var put T
		err := response.CheckETag(r, current)
		if err != nil {
			return put, err
		}

		if patch {
			put, err = PatchBase(current)
			if err != nil {
				return put, err
			}
		}

		return put, UnmarshalBody(body, &put)
	}
}
