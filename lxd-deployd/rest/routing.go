package rest

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

// HandlerFunc answers a request; it never writes to the ResponseWriter itself.
type HandlerFunc func(r *http.Request) response.Response

// AccessCheck decides whether the request's caller may run an action. It returns nil to
// allow, or a StatusError (403, 404) that is sent as is.
type AccessCheck func(r *http.Request) error

// Action is one method of an endpoint.
type Action struct {
	// Handler answers the request.
	Handler HandlerFunc

	// Access must be set unless Public is: registration refuses an action without either,
	// so nobody forgets authorization.
	Access AccessCheck
	Public bool

	// Governor marks the actions also served on the in-instance governor transports.
	Governor bool
}

// Endpoint is one path of the API and what each method does there.
type Endpoint struct {
	Path   string
	Get    Action
	Post   Action
	Put    Action
	Patch  Action
	Delete Action
}

// Actions returns the endpoint's actions by method (one without a handler is not served).
func (e Endpoint) Actions() map[string]Action {
	return map[string]Action{
		http.MethodGet:    e.Get,
		http.MethodPost:   e.Post,
		http.MethodPut:    e.Put,
		http.MethodPatch:  e.Patch,
		http.MethodDelete: e.Delete,
	}
}

// Authenticator turns a request into a Caller.
type Authenticator func(r *http.Request) (*auth.Caller, error)

// NewRouter registers every endpoint behind the authenticator. It panics on an action with
// no access check that is not marked public: a programming error caught at start. With
// governorOnly, only the actions marked for the governor transports are served.
func NewRouter(endpoints []Endpoint, authenticate Authenticator, logger *slog.Logger, governorOnly bool) *mux.Router {
	router := mux.NewRouter()
	router.StrictSlash(false)
	router.SkipClean(true)
	router.UseEncodedPath()

	for _, e := range endpoints {
		methods := map[string]Action{}
		for method, a := range e.Actions() {
			if a.Handler == nil || (governorOnly && !a.Governor) {
				continue
			}

			if a.Access == nil && !a.Public {
				panic(fmt.Sprintf("%s %s has no access check and is not public", method, e.Path))
			}

			methods[method] = a
		}

		if len(methods) == 0 {
			continue
		}

		path := e.Path
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
func serve(w http.ResponseWriter, r *http.Request, path string, methods map[string]Action, authenticate Authenticator, logger *slog.Logger) {
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
		if !a.Public {
			err = a.Access(r)
			if err != nil {
				return response.SmartError(err)
			}
		}

		return a.Handler(r)
	}()

	err := resp.Render(w)
	if err != nil {
		requestLogger(r.Context()).Debug("write response", "err", err)
	}

	// Observe logs the request with its id; this line is for routers used without it.
	_, observed := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if !observed {
		logger.Debug("request", "method", r.Method, "url", r.URL.RequestURI(), "caller", auth.CallerFromContext(r.Context()).String(), "duration", time.Since(start))
	}
}
