package main

import (
	"context"
	"fmt"

	"github.com/canonical/lxd/shared/units"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// templateEngine expands templated configs. The daemon's engine is an isolate.Runner: every
// expansion runs in a child process with memory, CPU and time limits, so that template code
// (which anyone controlling a template in a configured registry writes) never runs in the
// daemon's address space. Unit tests may pass inProcessEngine.
type templateEngine interface {
	Expand(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, error)
}

// inProcessEngine expands in the calling process, with the engine's own limits only.
type inProcessEngine struct{}

func (inProcessEngine) Expand(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, error) {
	return templates.Expand(ctx, config, imports, opts)
}

// engineOrDefault is the engine to use: nil means a child process with the defaults, never
// in-process, so that a handler set up without one is still isolated.
func engineOrDefault(engine templateEngine) templateEngine {
	if engine == nil {
		return &isolate.Runner{Budget: expansionBudget}
	}

	return engine
}

// templateEngine is the daemon's engine: a child process per expansion, limited to
// --template-max-memory beyond its baseline and to the expansion budget.
func (d *daemon) templateEngine() templateEngine {
	return &isolate.Runner{MaxMemory: d.config.templateMaxMemory, Budget: expansionBudget, MaxConcurrent: maxConcurrentExpansions}
}

// maxConcurrentExpansions bounds the memory expansions may take together: 4 x
// --template-max-memory (2 GiB by default).
const maxConcurrentExpansions = 4

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
