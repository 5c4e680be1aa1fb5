package apply

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
)

// Engine expands, plans and applies templated configs for the deployment handlers.
type Engine struct {
	store    Store
	fleet    Fleet
	reporter Reporter
	metrics  Metrics
	expander Expander
	fetch    templates.Fetcher
}

// EngineConfig is what the engine is built from.
type EngineConfig struct {
	Store    Store
	Fleet    Fleet
	Reporter Reporter
	Metrics  Metrics

	// Expander expands configs (nil: in a child process with default limits).
	Expander Expander

	// Fetch reaches the template registries the daemon is configured with (nil: none).
	Fetch templates.Fetcher
}

// New builds the engine once, with everything it uses.
func New(c EngineConfig) *Engine {
	return &Engine{store: c.Store, fleet: c.Fleet, reporter: c.Reporter, metrics: c.Metrics, expander: c.Expander, fetch: c.Fetch}
}

// Expand expands a config for a deployment on behalf of by (see Expand), counting the time
// it took.
func (e *Engine) Expand(ctx context.Context, by api.DeploymentRequestor, project string, deployment string, input string, imports map[string]string, cause string) (*Config, error) {
	start := time.Now()
	c, err := Expand(ctx, e.expander, e.fetch, by, project, deployment, input, imports, cause)
	if e.metrics != nil {
		e.metrics.TemplateExpansion(time.Since(start))
	}

	return c, err
}

// PlanCreate is the dry run of a create from c: what it would make, or the 409 the create
// would meet when the deployment exists.
func (e *Engine) PlanCreate(ctx context.Context, project string, deployment string, c *Config) (api.DeploymentTemplatePlan, error) {
	err := e.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.GetDeploymentID(ctx, tx, project, deployment)
		if err == nil {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q already exists in project %q", deployment, project)
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return nil
		}

		return err
	})
	if err != nil {
		return api.DeploymentTemplatePlan{}, err
	}

	return c.PlanAPI(planShapes(nil, nil, nil, c.shapes, c.order)), nil
}

// Plan plans c against an existing deployment after check (which may refuse the request,
// nil: none), in one transaction.
func (e *Engine) Plan(ctx context.Context, ref refs.DeploymentRef, c *Config, check func(ctx context.Context, tx *sql.Tx) error) (Plan, error) {
	var p Plan
	err := e.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		if check != nil {
			err = check(ctx, tx)
			if err != nil {
				return err
			}
		}

		p, err = c.plan(ctx, tx, id)
		return err
	})

	return p, err
}

// DeleteDropped deletes, for by, the instances of the shapes p deletes (an apply with
// ?force=1), through the fleet. The shapes themselves go in the transaction that applies
// the config, which also refuses any instance launched since.
func (e *Engine) DeleteDropped(ctx context.Context, by api.DeploymentRequestor, p Plan) error {
	for _, d := range p.delete {
		if d.instances == 0 {
			continue
		}

		shapeID := d.id
		err := e.fleet.DeleteWithInstances(ctx, by, fmt.Sprintf("shape %q", d.name), true,
			func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
				return db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
			},
			func(ctx context.Context, tx *sql.Tx) error { return nil })
		if err != nil {
			return err
		}
	}

	return nil
}

// ApplyTo applies c to an existing deployment in a transaction of its own (a rollback,
// which changes nothing else), and returns the deployment's ID and the manifest recorded.
func (e *Engine) ApplyTo(ctx context.Context, ref refs.DeploymentRef, c *Config) (int64, *db.Manifest, error) {
	var id int64
	var applied *db.Manifest
	err := e.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		err = c.Apply(ctx, tx, id)
		if err != nil {
			return err
		}

		applied, err = db.GetManifest(ctx, tx, id, c.manifest)
		return err
	})

	return id, applied, err
}

// Announce sends the lifecycle events of an applied config once its transaction
// committed, and asks the governor to move shapes whose new bounds left them outside. A
// nil config, or one not applied, announces nothing.
func (e *Engine) Announce(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, c *Config) {
	if c == nil || c.done == nil {
		return
	}

	for _, d := range c.done.delete {
		e.reporter.ShapeDeleted(by, ref, deploymentID, d.name)
	}

	for _, u := range c.done.update {
		e.reporter.ShapeUpdated(ctx, by, ref, deploymentID, u.before, u.put)
		revised := c.revised[u.before.Name]
		e.reporter.ShapeRevised(by, refs.ShapeRef{DeploymentRef: ref, Shape: u.before.Name}, deploymentID, revised.Revision, revised.Rollout)
	}

	for _, cr := range c.done.create {
		e.reporter.ShapeCreated(ctx, by, ref, deploymentID, cr.Name, cr.DeploymentShapePut)
	}

	e.reporter.Send(by, deploymentID, reporter.ManifestCreated.Event(ref, c.manifest))
}
