package main

import (
	"fmt"

	"github.com/canonical/lxd/shared/units"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// applyEngine builds the templated-config apply engine (package apply) with what it uses:
// the database, the fleet (forced deletes), the reporter, and the daemon's expander, a
// child process per expansion limited to --template-max-memory beyond its baseline and to
// the expansion budget, fetching from the configured registries only.
func (d *daemon) applyEngine() *apply.Engine {
	return apply.New(apply.EngineConfig{
		Store:    d.db,
		Fleet:    d.fleet,
		Reporter: d.reporter,
		Metrics:  d.reporter.Metrics(),
		Expander: apply.Isolated(d.config.templateMaxMemory),
		Fetch:    d.templateFetcher(),
	})
}

// byteSize is a flag holding a byte count written as LXD writes them ("512MiB", "1GB").
type byteSize struct{ n *int64 }

func (b *byteSize) String() string {
	if b.n == nil || *b.n == 0 {
		return units.GetByteSizeStringIEC(isolate.DefaultMaxMemory, 0)
	}

	return units.GetByteSizeStringIEC(*b.n, 0)
}

func (b *byteSize) Set(value string) error {
	n, err := units.ParseByteSizeString(value)
	if err != nil {
		return err
	}

	if n < 64<<20 {
		return fmt.Errorf("must be at least 64MiB, got %q", value)
	}

	*b.n = n
	return nil
}

func (b *byteSize) Type() string { return "size" }
