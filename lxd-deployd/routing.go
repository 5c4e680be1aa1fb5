package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// handlerFunc answers a request; it never writes to the ResponseWriter itself.
type handlerFunc func(r *http.Request) response.Response

// accessCheck decides whether the request's caller may run an action. It returns nil to
// allow, or a StatusError (403, 404) that is sent as is.
type accessCheck func(r *http.Request) error

// action is one method of an endpoint.
type action struct {
	handler handlerFunc

	// access must be set unless public is: registration refuses an action without either,
	// so nobody forgets authorization.
	access accessCheck
	public bool

	// governor marks the actions also served on the in-instance governor transports.
	governor bool
}

// endpoint is one path of the API and what each method does there.
type endpoint struct {
	path   string
	get    action
	post   action
	put    action
	patch  action
	delete action
}

func (e endpoint) actions() map[string]action {
	return map[string]action{
		http.MethodGet:    e.get,
		http.MethodPost:   e.post,
		http.MethodPut:    e.put,
		http.MethodPatch:  e.patch,
		http.MethodDelete: e.delete,
	}
}

// authenticator turns a request into a Caller.
type authenticator func(r *http.Request) (*auth.Caller, error)

// newRouter registers every endpoint behind the authenticator. It panics on an action with
// no access check that is not marked public: a programming error caught at start. With
// governorOnly, only the actions marked for the governor transports are served.
func newRouter(endpoints []endpoint, authenticate authenticator, logger *slog.Logger, governorOnly bool) *mux.Router {
	router := mux.NewRouter()
	router.StrictSlash(false)
	router.SkipClean(true)
	router.UseEncodedPath()

	for _, e := range endpoints {
		methods := map[string]action{}
		for method, a := range e.actions() {
			if a.handler == nil || (governorOnly && !a.governor) {
				continue
			}

			if a.access == nil && !a.public {
				panic(fmt.Sprintf("%s %s has no access check and is not public", method, e.path))
			}

			methods[method] = a
		}

		if len(methods) == 0 {
			continue
		}

		path := e.path
		router.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			serve(w, r, path, methods, authenticate, logger)
		})
	}

	router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = response.NotFound(fmt.Errorf("no such API endpoint: %s", r.URL.Path)).Render(w)
	})

	return router
}

// serve runs one request through authentication, the access check and the handler, and
// logs it in one line.
func serve(w http.ResponseWriter, r *http.Request, path string, methods map[string]action, authenticate authenticator, logger *slog.Logger) {
	start := time.Now()
	defer recoverHandler(w, r, logger)
	limitBodyRead(w, r)
	resp := func() response.Response {
		requestStarted(r, path, nil)
		a, ok := methods[r.Method]
		if !ok {
			return response.ErrorResponse(http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", r.Method, path))
		}

		// Go's URL.Query drops malformed pairs silently (?project=%zz would become the
		// default project): refuse them.
		_, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return response.ErrorResponse(http.StatusBadRequest, fmt.Sprintf("malformed query string: %v: escape %% as %%25", err))
		}

		caller, err := authenticate(r)
		if err != nil {
			return response.SmartError(err)
		}

		r = r.WithContext(auth.WithCaller(r.Context(), caller))
		requestStarted(r, path, caller)
		if !a.public {
			err = a.access(r)
			if err != nil {
				return response.SmartError(err)
			}
		}

		return a.handler(r)
	}()

	err := resp.Render(w)
	if err != nil {
		requestLogger(r.Context()).Debug("write response", "err", err)
	}

	// observe logs the request with its id; this line is for routers used without it.
	_, observed := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if !observed {
		logger.Debug("request", "method", r.Method, "url", r.URL.RequestURI(), "caller", auth.CallerFromContext(r.Context()).String(), "duration", time.Since(start))
	}
}
