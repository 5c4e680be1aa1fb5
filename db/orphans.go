package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// GetOrphans returns the instance URLs last found orphaned, by deployment id, sorted.
func GetOrphans(ctx context.Context, tx *sql.Tx) (map[int64][]string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT deployment_id, url FROM orphans ORDER BY deployment_id, url")
	if err != nil {
		return nil, fmt.Errorf("read orphans: %w", err)
	}

	defer func() { _ = rows.Close() }()
	orphans := map[int64][]string{}
	for rows.Next() {
		var id int64
		var url string
		err = rows.Scan(&id, &url)
		if err != nil {
			return nil, fmt.Errorf("read orphans: %w", err)
		}

		orphans[id] = append(orphans[id], url)
	}

	return orphans, rows.Err()
}

// ReplaceOrphans replaces the whole orphan list with what a reconcile pass found,
// keeping the first-found time of those still orphaned. It returns the URLs that are new,
// by deployment id, so that only those are announced.
func ReplaceOrphans(ctx context.Context, tx *sql.Tx, found map[int64][]string, now time.Time) (map[int64][]string, error) {
	previous, err := GetOrphans(ctx, tx)
	if err != nil {
		return nil, err
	}

	known := map[string]bool{}
	for id, urls := range previous {
		for _, url := range urls {
			known[fmt.Sprintf("%d %s", id, url)] = true
		}
	}

	added := map[int64][]string{}
	keep := map[string]bool{}
	for id, urls := range found {
		for _, url := range urls {
			key := fmt.Sprintf("%d %s", id, url)
			keep[key] = true
			if known[key] {
				continue
			}

			added[id] = append(added[id], url)
			_, err = tx.ExecContext(ctx, "INSERT INTO orphans (deployment_id, url, found_at) VALUES (?, ?, ?)", id, url, now.UTC())
			if err != nil {
				return nil, fmt.Errorf("record orphan %s: %w", url, err)
			}
		}
	}

	for id, urls := range previous {
		for _, url := range urls {
			if keep[fmt.Sprintf("%d %s", id, url)] {
				continue
			}

			_, err = tx.ExecContext(ctx, "DELETE FROM orphans WHERE deployment_id = ? AND url = ?", id, url)
			if err != nil {
				return nil, fmt.Errorf("forget orphan %s: %w", url, err)
			}
		}
	}

	return added, nil
}
