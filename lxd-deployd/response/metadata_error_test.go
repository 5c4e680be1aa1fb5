package response

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// An error with metadata keeps its status and message, and its metadata reaches the
// envelope, through any wrapping.
func TestMetadataError(t *testing.T) {
	err := fmt.Errorf("apply: %w", &MetadataError{Status: http.StatusBadRequest, Err: errors.New("two problems"), Metadata: map[string]any{"problems": []string{"a", "b"}}})
	rec, body := render(t, SmartError(err))
	if rec.Code != http.StatusBadRequest || body["error"] != "apply: two problems" || body["type"] != "error" {
		t.Fatalf("status %d, body %v", rec.Code, body)
	}

	want := map[string]any{"problems": []any{"a", "b"}}
	if !reflect.DeepEqual(body["metadata"], want) {
		t.Errorf("metadata = %v, want %v", body["metadata"], want)
	}

	// Other errors keep a null metadata.
	_, body = render(t, SmartError(errors.New("x")))
	if body["metadata"] != nil {
		t.Errorf("plain error metadata = %v", body["metadata"])
	}
}
