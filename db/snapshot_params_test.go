package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestSnapshotEvery: raft takes a snapshot every snapshotParams.Threshold entries, so that
// the log it keeps in memory stays short (its entries were most of the C memory at 1,000
// instances, BenchmarkMemory): after 100 writes the newest snapshot is at most a
// threshold behind the last write.
func TestSnapshotEvery(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = c.Close(context.Background()) }()
	const writes = 100
	for i := 0; i < writes; i++ {
		tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
			_, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: fmt.Sprintf("rss%d", i)}})
			return err
		})
	}

	// Snapshots are written in the background.
	newest := uint64(0)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		newest = newestSnapshot(t, dir)
		if newest+uint64(snapshotParams.Threshold) >= writes {
			return
		}
	}

	t.Fatalf("newest snapshot at entry %d after %d writes, want one at most %d entries behind", newest, writes, snapshotParams.Threshold)
}

// newestSnapshot is the raft index of the newest snapshot in dir (snapshot-<term>-<index>-<time>).
func newestSnapshot(t *testing.T, dir string) uint64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}

	newest := uint64(0)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "snapshot-") || filepath.Ext(e.Name()) == ".meta" {
			continue
		}

		var term, index, at uint64
		_, err := fmt.Sscanf(e.Name(), "snapshot-%d-%d-%d", &term, &index, &at)
		if err == nil {
			newest = max(newest, index)
		}
	}

	return newest
}
