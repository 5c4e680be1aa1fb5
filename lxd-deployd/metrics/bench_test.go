package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
)

// BenchmarkScrape1000Shapes times a scrape's collection and encoding of 1,000 shapes from
// a snapshot in memory: the part of a scrape that is not the database query.
func BenchmarkScrape1000Shapes(b *testing.B) {
	shapes := make([]ShapeStat, 0, 1000)
	for i := 0; i < 1000; i++ {
		shapes = append(shapes, ShapeStat{Project: "default", Deployment: fmt.Sprintf("dep%d", i/50), Shape: fmt.Sprintf("s%d", i%50), Current: 3, Maximum: 5, Revision: 2})
	}

	m := New(Sources{Snapshot: func(ctx context.Context) (Snapshot, error) { return Snapshot{Shapes: shapes}, nil }})
	handler := m.Handler()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", "/1.0/metrics", nil))
		_, _ = io.Copy(io.Discard, w.Body)
	}
}
