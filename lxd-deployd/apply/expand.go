package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// Causes recorded in manifests (seed 002).
const (
	CauseCreate   = "create"
	CauseUpdate   = "update"
	CauseRollback = "rollback of "
)

// ExpansionBudget is the most time one request may spend expanding a config.
const ExpansionBudget = 30 * time.Second

// maxConcurrentExpansions bounds the memory expansions may take together: 4 x
// --template-max-memory (2 GiB by default).
const maxConcurrentExpansions = 4

// InProcess expands in the calling process, with the engine's own limits only.
type InProcess struct{}

// Expand expands config with the template engine of shared/templates.
func (InProcess) Expand(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, error) {
	return templates.Expand(ctx, config, imports, opts)
}

// Isolated is the daemon's expander: a child process per expansion, limited to maxMemory
// (--template-max-memory) beyond its baseline and to the expansion budget.
func Isolated(maxMemory int64) Expander {
	return &isolate.Runner{MaxMemory: maxMemory, Budget: ExpansionBudget, MaxConcurrent: maxConcurrentExpansions}
}

// expanderOrDefault is the expander to use: nil means a child process with the defaults,
// never in-process, so that an engine set up without one is still isolated.
func expanderOrDefault(expander Expander) Expander {
	if expander == nil {
		return &isolate.Runner{Budget: ExpansionBudget}
	}

	return expander
}

// Config is a templated config expanded for one deployment, on its way to being applied.
type Config struct {
	cause   string
	input   string
	imports map[string]string
	shapes  map[string]api.DeploymentShapePut
	order   []string
	config  api.DeploymentManifestConfig
	layout  api.DeploymentManifestConfig

	// warnings of the expansion, for the dry-run plan and the apply's answer.
	warnings []api.DeploymentTemplateWarning
	// Who asked for the expansion: the shape revisions it makes name them.
	by api.DeploymentRequestor

	// What the last run of apply did, for the events sent once its transaction committed.
	done     *Plan
	manifest string
	revised  map[string]rollout.Revised
}

// Warnings are the expansion's warnings, for the apply's answer.
func (c *Config) Warnings() []api.DeploymentTemplateWarning {
	return c.warnings
}

// Manifest names the manifest the last Apply recorded.
func (c *Config) Manifest() string {
	return c.manifest
}

// Expand expands a config for a deployment on behalf of by and turns it into shapes. Any
// failure is a 400 carrying the engine's message, before anything was changed. fetch, when
// not nil, reaches only the registries listed in the daemon's configuration
// (--template-registry); other URL and registry types must come embedded in the imports, as
// the CLI sends them. expander runs the expansion (nil: a child process, see Isolated).
func Expand(ctx context.Context, expander Expander, fetch templates.Fetcher, by api.DeploymentRequestor, project string, deployment string, input string, imports map[string]string, cause string) (*Config, error) {
	files := make(map[string][]byte, len(imports))
	for name, content := range imports {
		files[name] = []byte(content)
	}

	// The engine's limits hold per template; this bounds the whole expansion, so that a
	// config of many slow templates cannot hold a request (and a core) for long.
	ctx, cancel := context.WithTimeout(ctx, ExpansionBudget)
	defer cancel()
	exp, err := expanderOrDefault(expander).Expand(ctx, []byte(input), files, templates.Options{
		Env:   templates.Env{Deployment: deployment, Project: project},
		Fetch: fetch,
	})
	if err != nil {
		// A child that could not run is the daemon's fault (500); what the templates did,
		// limits included, is the config's (400).
		var ee *templates.ExpandError
		if errors.Is(err, isolate.ErrChild) && !errors.As(err, &ee) {
			return nil, err
		}

		return nil, expansionError(err)
	}

	shapes, order, err := templates.Shapes(exp)
	var expandErr *templates.ExpandError
	if errors.As(err, &expandErr) {
		expandErr.Warnings = exp.Warnings // The expansion's, which succeeded.
	}

	if err != nil {
		return nil, expansionError(err)
	}

	for name, put := range shapes {
		if put.Config == nil {
			put.Config = map[string]string{}
			shapes[name] = put
		}
	}

	c := &Config{cause: cause, input: input, imports: imports, shapes: shapes, order: order, warnings: exp.Warnings, by: by}
	if c.imports == nil {
		c.imports = map[string]string{}
	}

	err = convertJSON(exp.Config, &c.config)
	if err == nil {
		err = convertJSON(exp.Layout, &c.layout)
	}

	if err != nil {
		return nil, badRequest(fmt.Errorf("the expanded config cannot be stored: %w", err))
	}

	return c, nil
}

// expansionError is the 400 of a config that does not expand. An engine error carries
// every problem and warning in the answer's metadata (api.DeploymentTemplateError), which
// the client and CLI show one per line.
func expansionError(err error) error {
	var expandErr *templates.ExpandError
	if errors.As(err, &expandErr) {
		return &response.MetadataError{Status: http.StatusBadRequest, Err: err, Metadata: expandErr.API()}
	}

	return badRequest(err)
}

// badRequest wraps an error of the config as a 400.
func badRequest(err error) error {
	if err == nil {
		return nil
	}

	return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
}

// convertJSON copies the engine's config and layout into the API's types, which have the
// same JSON form (shared/api cannot import the engine, which imports it).
func convertJSON(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}

	return json.Unmarshal(data, to)
}
