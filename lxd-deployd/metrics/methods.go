package metrics

import "net/http"

// MethodOther is the label of every request method outside Methods.
const MethodOther = "other"

// Methods are the request methods that are labels of their own: the API's five and the
// other methods of RFC 9110, so that a scan with HEAD or OPTIONS is still told apart. A
// method is a client's free text (any token, 256 KiB long if the client likes); used as a
// label as sent, each new one would be a new series kept until restart.
var Methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace,
}

// Method folds a request method onto Methods: a known method (exact case, as RFC 9110
// says methods are case-sensitive) is itself, anything else is MethodOther. The result is
// always one of ten short constants, never the caller's string.
func Method(method string) string {
	switch method {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodConnect:
		return http.MethodConnect
	case http.MethodTrace:
		return http.MethodTrace
	}

	return MethodOther
}
