package rest

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// ListResponse answers a collection GET the LXD way: the objects' URLs without recursion,
// the objects themselves with recursion=1.
func ListResponse[R any, T any](level int, rows []R, url func(R) string, object func(R) T) response.Response {
	if level == 0 {
		urls := make([]string, 0, len(rows))
		for _, row := range rows {
			urls = append(urls, url(row))
		}

		return response.SyncResponse(urls)
	}

	objects := make([]T, 0, len(rows))
	for _, row := range rows {
		objects = append(objects, object(row))
	}

	return response.SyncResponse(objects)
}
