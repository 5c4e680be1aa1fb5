package frontdoor

import (
	"context"
	"errors"
	"testing"
)

// fakeDoor counts what a Lazy hands it.
type fakeDoor struct{ applied, closed int }

func (d *fakeDoor) Apply(ctx context.Context, frontends []Frontend) error { d.applied++; return nil }
func (d *fakeDoor) Stats(ctx context.Context) (map[string]FrontendStats, error) {
	return map[string]FrontendStats{"k": {}}, nil
}
func (d *fakeDoor) Close() error { d.closed++; return nil }

// TestLazyOpensAtTheFirstFrontend: stats, an empty picture and close open nothing; the
// first picture that names a frontend opens the door once, and a failed open says so.
func TestLazyOpensAtTheFirstFrontend(t *testing.T) {
	ctx := context.Background()
	door := &fakeDoor{}
	opens := 0
	l := &Lazy{Open: func(ctx context.Context) (Door, error) { opens++; return door, nil }}
	stats, err := l.Stats(ctx)
	if err != nil || len(stats) != 0 {
		t.Fatalf("stats before opening: %v %v", stats, err)
	}

	if l.Apply(ctx, nil) != nil || l.Close() != nil || opens != 0 {
		t.Fatalf("an empty picture or a close opened the door (%d opens)", opens)
	}

	for range 2 {
		err = l.Apply(ctx, []Frontend{{Key: "k"}})
		if err != nil {
			t.Fatal(err)
		}
	}

	stats, _ = l.Stats(ctx)
	if opens != 1 || door.applied != 2 || len(stats) != 1 {
		t.Fatalf("opens %d, applied %d, stats %v: want 1, 2 and the door's", opens, door.applied, stats)
	}

	if l.Follow(ctx, []Frontend{{Key: "k"}}) != nil || opens != 1 {
		t.Fatalf("following through a door that does not follow: %d opens", opens)
	}

	if l.Close() != nil || door.closed != 1 {
		t.Fatalf("close reached the door %d times", door.closed)
	}

	failing := &Lazy{Open: func(ctx context.Context) (Door, error) { return nil, errors.New("no haproxy") }}
	err = failing.Apply(ctx, []Frontend{{Key: "k"}})
	if err == nil || err.Error() != "open the front door: no haproxy" {
		t.Fatalf("failed open: %v", err)
	}
}
