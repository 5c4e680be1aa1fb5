package backend

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// SafeLimits refuses instance config LXD must not be sent: a limits.cpu past the daemon's
// ceiling (validate.TemplateLimits), which LXD would expand into one entry per CPU. Every
// path that stores a template refuses such a value already; this holds LXD safe from one a
// database kept from before the ceiling, which every launch, autoheal and in-place pass
// would otherwise send again (issue 32). The error says how to fix the shape.
func SafeLimits(config map[string]string) error {
	err := validate.TemplateLimits(config)
	if err != nil {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "not sent to LXD: %v: set the shape's template to a valid limits.cpu (PUT or PATCH the shape)", err)
	}

	return nil
}
