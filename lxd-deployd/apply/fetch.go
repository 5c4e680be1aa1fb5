package apply

import (
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// RegistryFetcher returns the fetcher for the template registries the daemon is configured
// with (--template-registry, --template-default-registry), or nil: the daemon fetches from
// nowhere else (no GitHub fallback, no plain URLs outside them).
func RegistryFetcher(registries map[string]string, defaultRegistry string) templates.Fetcher {
	if len(registries) == 0 {
		return nil
	}

	return &registry.Fetcher{
		Registries: registries,
		Default:    defaultRegistry,
		Client:     &http.Client{Timeout: 30 * time.Second},
	}
}
