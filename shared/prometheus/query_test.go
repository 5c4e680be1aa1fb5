package prometheus_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/prometheus"
	"github.com/lxd-deployd/lxd-deployd/test/promtest"
)

// TestQuery asks a real Prometheus, scraping an exporter the test controls, every kind of
// answer a query can get.
func TestQuery(t *testing.T) {
	exporter := promtest.NewExporter(t, "load{shape=\"web\",part=\"a\"} 3\nload{shape=\"web\",part=\"b\"} 4\n")
	server := promtest.Start(t, exporter.Target())

	// A path prefix's trailing slash is no second slash.
	c, err := prometheus.New(server.URL+"/", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	for _, test := range []struct {
		query string
		value float64
		err   string // substring of the error; "" for none
	}{
		{query: `sum(load{shape="web"})`, value: 7},
		{query: `max(load)`, value: 4},
		{query: `scalar(sum(load))`, value: 7},
		{query: `5`, value: 5},
		{query: `sum(load) / 0`, value: math.Inf(1)},
		{query: `load`, err: `the query returned 2 series ({__name__="load",instance=`},
		{query: `sum(nothing_here)`, err: "no data: the query matched no series"},
		{query: `sum(load) * 0 / 0`, err: "no data: the query returned NaN"},
		{query: `sum(load`, err: "query refused (HTTP 400, bad_data)"},
		{query: `load + on(shape) load`, err: "query refused (HTTP 422, execution)"},
		{query: `load[1m]`, err: "the query returned a matrix, not one number"},
		{query: `"text"`, err: "the query returned a string, not one number"},
	} {
		value, err := c.Query(context.Background(), test.query)
		switch {
		case test.err == "" && (err != nil || value != test.value):
			t.Errorf("%s: %v, %v; want %v", test.query, value, err, test.value)
		case test.err != "" && (err == nil || !strings.Contains(err.Error(), test.err)):
			t.Errorf("%s: %v, %v; want an error saying %q", test.query, value, err, test.err)
		}

		if strings.HasPrefix(test.err, "no data") != errors.Is(err, prometheus.ErrNoData) {
			t.Errorf("%s: %v is ErrNoData: %v", test.query, err, errors.Is(err, prometheus.ErrNoData))
		}
	}

	// The value follows the exporter from the next scrape on.
	exporter.Set("load{shape=\"web\",part=\"a\"} 10\n")
	deadline := time.Now().Add(30 * time.Second)
	for {
		value, err := c.Query(context.Background(), "sum(load)")
		if err == nil && value == 10 {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("sum(load) stays %v (%v), want 10 after the exporter changed", value, err)
		}

		time.Sleep(200 * time.Millisecond)
	}

	// Something that is not Prometheus' API.
	c, err = prometheus.New("http://"+exporter.Target(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	_, err = c.Query(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "not an answer of Prometheus' API (HTTP 200") {
		t.Errorf("not Prometheus: %v", err)
	}

	// No server there; the password never shows.
	server.Stop()
	c, err = prometheus.New(strings.Replace(server.URL, "http://", "http://gov:s3cret@", 1), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	_, err = c.Query(context.Background(), "up")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "gov:xxxxx@") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("stopped server: %v", err)
	}

	if strings.Contains(c.String(), "s3cret") {
		t.Errorf("String shows the password: %s", c)
	}
}

func TestNew(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:9090", "ftp://host:21", "http://", "http://host:9090/?x=1", "http://host:9090/#top", "http://u:pw@host:9090/?x=1", "u:pw@host:9090"} {
		_, err := prometheus.New(bad, time.Second)
		if err == nil || !strings.Contains(err.Error(), "is no Prometheus URL: want http://host:port") || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%q: %v", bad, err)
		}
	}

	_, err := prometheus.New("http://host:9090", 0)
	if err == nil || !strings.Contains(err.Error(), "timeout must be positive") {
		t.Errorf("no timeout: %v", err)
	}
}
