package events

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Subscription reads what a /1.0/events request asks for (?type=operation,lifecycle,
// logging,endpoints, ?project=, ?all-projects=) and refuses what the caller may not see:
// the daemon's own log is for admins only, as LXD's. As LXD, the project is the default
// one unless another is named, and "" (every project) with all-projects=true.
func Subscription(query url.Values, admin bool) (types []string, project string, err error) {
	for _, t := range strings.Split(query.Get("type"), ",") {
		switch t {
		case "":
		case lxdapi.EventTypeOperation, lxdapi.EventTypeLifecycle, api.EventTypeEndpoints:
			types = append(types, t)
		case lxdapi.EventTypeLogging:
			if !admin {
				return nil, "", lxdapi.StatusErrorf(http.StatusForbidden, "logging events are for admins only: ask for operation or lifecycle events")
			}

			types = append(types, t)
		default:
			return nil, "", lxdapi.StatusErrorf(http.StatusBadRequest, "event type %q is not served: use operation, lifecycle, endpoints or logging", t)
		}
	}

	project = query.Get("project")
	if project == "" {
		project = api.DefaultProject
	}

	allProjects, _ := strconv.ParseBool(query.Get("all-projects"))
	if allProjects {
		project = ""
	}

	return types, project, nil
}
