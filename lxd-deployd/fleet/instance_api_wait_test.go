package fleet

import (
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestWaitListingGivesUp: a listing LXD does not answer (frozen) is given up after its
// limit, as if LXD were down, instead of holding the request.
func TestWaitListingGivesUp(t *testing.T) {
	stalled := make(chan struct{})
	defer close(stalled)
	start := time.Now()
	_, err := WaitListing(func([]string) (map[string]lxdapi.Instance, error) {
		<-stalled
		return nil, nil
	}, nil, 50*time.Millisecond)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a stalled listing: %v after %v", err, time.Since(start))
	}

	live, err := WaitListing(func([]string) (map[string]lxdapi.Instance, error) {
		return map[string]lxdapi.Instance{"a": {}}, nil
	}, nil, time.Minute)
	if err != nil || len(live) != 1 {
		t.Fatalf("an answered listing: %v %v", live, err)
	}
}
