package observed

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// listingLXD answers a recursion=2 instance listing of project p1 with body (a 500 when
// body is empty), counting listings, after release (nil: at once); down makes it
// unreachable (the connection's 503).
type listingLXD struct {
	mu      sync.Mutex
	body    string
	down    bool
	release chan struct{}
	calls   atomic.Int32
}

func (f *listingLXD) Metrics(string) (string, error) {
	return "", errors.New("no metrics in this test")
}

func (f *listingLXD) Requests() (backend.DoHTTPer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errors.New("LXD is unavailable")
	}

	return f, nil
}

func (f *listingLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	f.mu.Lock()
	body, release := f.body, f.release
	f.mu.Unlock()
	if release != nil {
		<-release
	}

	rec := httptest.NewRecorder()
	if body == "" || req.URL.Query().Get("recursion") != "2" || req.URL.Query().Get("project") != "p1" {
		rec.WriteHeader(http.StatusInternalServerError)
		_, _ = rec.WriteString(`{"type":"error","error":"broken","error_code":500}`)
		return rec.Result(), nil
	}

	_, _ = rec.WriteString(body)
	return rec.Result(), nil
}

func (f *listingLXD) set(change func(f *listingLXD)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

const listedA = `{"type":"sync","status_code":200,"metadata":[
	{"name":"a","type":"container","status_code":103,"expanded_devices":{"eth0":{"type":"nic","name":"eth0"}},"state":{"network":{"eth0":{"addresses":[{"family":"inet","address":"10.0.3.5","scope":"global"}]}}}}]}`

// One listing serves every reader of a project for maxAge (the checks of a thousand
// instances cost LXD one listing every few seconds), readers that come while it is made
// wait for it, and a broken LXD within maxAge changes nothing.
func TestServingSharesOneListing(t *testing.T) {
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	fake := &listingLXD{body: listedA, release: make(chan struct{})}
	s := New(fake, nil, nil)
	s.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			listing, err := s.Serving(context.Background(), "p1", 3*time.Second)
			if err != nil || listing["a"].Address.String() != "10.0.3.5" {
				t.Errorf("a reader got %v %v", listing, err)
			}
		}()
	}

	for fake.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	time.Sleep(50 * time.Millisecond) // the others join the listing in flight
	close(fake.release)
	wg.Wait()
	if fake.calls.Load() != 1 {
		t.Fatalf("%d listings for 8 readers at once, want 1", fake.calls.Load())
	}

	fake.set(func(f *listingLXD) { f.body, f.release = "", nil })
	clock.Lock()
	now = now.Add(3 * time.Second)
	clock.Unlock()
	if listing, err := s.Serving(context.Background(), "p1", 3*time.Second); err != nil || listing["a"].Address.String() != "10.0.3.5" || fake.calls.Load() != 1 {
		t.Fatalf("within maxAge: %v %v after %d listings", listing, err, fake.calls.Load())
	}

	// A reader that accepts less age gets a new listing (here LXD's failure, as such).
	if listing, err := s.Serving(context.Background(), "p1", time.Second); err == nil || listing != nil || fake.calls.Load() != 2 {
		t.Fatalf("past maxAge: %v %v after %d listings", listing, err, fake.calls.Load())
	}
}

// An unreachable LXD is an error, never a project without instances, and is remembered
// for maxAge (a down LXD is not asked once per check); once LXD answers again, the next
// listing past maxAge sees the instances.
func TestServingLXDUnavailable(t *testing.T) {
	now := time.Unix(1000, 0)
	fake := &listingLXD{body: listedA, down: true}
	s := New(fake, nil, nil)
	s.now = func() time.Time { return now }
	listing, err := s.Serving(context.Background(), "p1", 3*time.Second)
	if err == nil || listing != nil {
		t.Fatalf("LXD down: %v %v", listing, err)
	}

	fake.set(func(f *listingLXD) { f.down = false })
	if _, err := s.Serving(context.Background(), "p1", 3*time.Second); err == nil || fake.calls.Load() != 0 {
		t.Fatalf("within maxAge of the failure: %v after %d listings", err, fake.calls.Load())
	}

	now = now.Add(4 * time.Second)
	listing, err = s.Serving(context.Background(), "p1", 3*time.Second)
	if err != nil || listing["a"].Address.String() != "10.0.3.5" {
		t.Fatalf("LXD back: %v %v", listing, err)
	}
}

// A reader whose context ends stops waiting; the listing goes on for the others.
func TestServingReaderGivesUp(t *testing.T) {
	fake := &listingLXD{body: listedA, release: make(chan struct{})}
	s := New(fake, nil, nil)
	first := make(chan error, 1)
	go func() {
		_, err := s.Serving(context.Background(), "p1", time.Second)
		first <- err
	}()

	for fake.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Serving(ctx, "p1", time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader past its deadline: %v", err)
	}

	close(fake.release)
	if err := <-first; err != nil {
		t.Fatalf("the listing's own reader: %v", err)
	}
}
