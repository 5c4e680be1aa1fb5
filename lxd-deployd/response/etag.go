package response

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// ETag hashes the JSON form of an object's writable fields.
func ETag(data any) string {
	encoded, err := json.Marshal(data)
	if err != nil {
		return ""
	}

	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:])
}

// CheckETag returns a 412 error when the request carries an If-Match that does not match
// the current state, so that a change based on a stale read is refused.
func CheckETag(r *http.Request, current any) error {
	match := r.Header.Get("If-Match")
	if match == "" {
		return nil
	}

	match = strings.Trim(match, "\"")
	if match != ETag(current) {
		return lxdapi.StatusErrorf(http.StatusPreconditionFailed, "the object changed since it was read (ETag mismatch): read it again and retry")
	}

	return nil
}
