package db

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// instancesByIDChunk bounds the ids one query names, well inside SQLite's limits on a
// statement's length.
const instancesByIDChunk = 500

// GetInstancesByID returns the rows of the instances with these ids that still exist, by
// id: one query for a batch of health results, where a query per result was most of what
// recording a tick's results cost (BenchmarkCheckerAtScale).
func GetInstancesByID(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]*Instance, error) {
	byID := make(map[int64]*Instance, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), instancesByIDChunk)]
		ids = ids[len(chunk):]

		// The ids are the daemon's own integers, written as literals: a statement's bound
		// parameters are fewer than a batch can hold.
		list := make([]string, len(chunk))
		for i, id := range chunk {
			list[i] = strconv.FormatInt(id, 10)
		}

		rows, err := queryInstances(ctx, tx, []string{"i.id IN (" + strings.Join(list, ", ") + ")"}, nil)
		if err != nil {
			return nil, err
		}

		for i := range rows {
			byID[rows[i].ID] = &rows[i]
		}
	}

	return byID, nil
}
