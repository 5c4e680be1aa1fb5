package isolate

import (
	"fmt"

	"github.com/canonical/lxd/shared/units"
)

// MemoryFlag is a flag (pflag.Value) holding a child's memory limit, a byte count written
// as LXD writes them ("512MiB", "1GB"), at least 64MiB; unset, it shows DefaultMaxMemory.
type MemoryFlag struct{ N *int64 }

func (b *MemoryFlag) String() string {
	if b.N == nil || *b.N == 0 {
		return units.GetByteSizeStringIEC(DefaultMaxMemory, 0)
	}

	return units.GetByteSizeStringIEC(*b.N, 0)
}

// Set parses value into the flag.
func (b *MemoryFlag) Set(value string) error {
	n, err := units.ParseByteSizeString(value)
	if err != nil {
		return err
	}

	if n < 64<<20 {
		return fmt.Errorf("must be at least 64MiB, got %q", value)
	}

	*b.N = n
	return nil
}

// Type names the flag's kind in --help.
func (b *MemoryFlag) Type() string { return "size" }
