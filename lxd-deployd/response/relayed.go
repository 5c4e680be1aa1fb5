package response

import (
	"io"
	"net/http"
)

// Relayed answers with another member's answer to a forwarded request, as is (at most
// 16 MiB of its body), and closes it.
func Relayed(resp *http.Response) Response {
	return ManualResponse(func(w http.ResponseWriter) error {
		defer func() { _ = resp.Body.Close() }()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, err := io.Copy(w, io.LimitReader(resp.Body, 16<<20))
		return err
	})
}
