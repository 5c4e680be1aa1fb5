package main

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
)

// applyEngine builds the templated-config apply engine (package apply) with what it uses:
// the database, the fleet (forced deletes), the reporter, and the daemon's expander, a
// child process per expansion limited to --template-max-memory beyond its baseline and to
// the expansion budget, fetching from the configured registries only.
func (d *daemon) applyEngine() *apply.Engine {
	return apply.New(apply.EngineConfig{
		Store:    d.db,
		Fleet:    d.fleet,
		Reporter: d.reporter,
		Metrics:  d.reporter.Metrics(),
		Expander: apply.Isolated(d.config.templateMaxMemory),
		Fetch:    apply.RegistryFetcher(d.config.templateRegistries, d.config.templateDefault),
	})
}
