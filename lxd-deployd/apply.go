package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Applying templated configs (doc/templates.md): a deployment's create or PUT may carry a
// config in "template"; the daemon expands it before any transaction, plans the shape
// changes against the database, and applies them together with a new manifest in one
// transaction. Only forced deletes of instances happen before it, since LXD is no part of
// the database.

// Causes recorded in manifests (seed 002).
const (
	causeCreate   = "create"
	causeUpdate   = "update"
	causeRollback = "rollback of "
)

// lifecycleManifestCreated is the lifecycle event of a newly applied manifest.
const lifecycleManifestCreated = "deployment-manifest-created"

// templateApply is a templated config expanded for one deployment, on its way to being
// applied.
type templateApply struct {
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
	done     *shapePlan
	manifest string
	revised  map[string]rollout.Revised
}

// expansionBudget is the most time one request may spend expanding a config.
const expansionBudget = 30 * time.Second

// expandTemplate expands a config for a deployment and turns it into shapes. Any failure is
// a 400 carrying the engine's message, before anything was changed. fetch, when not nil,
// reaches only the registries listed in the daemon's configuration (--template-registry);
// other URL and registry types must come embedded in the imports, as the CLI sends them.
// engine runs the expansion (nil: a child process, see templateEngine).
func expandTemplate(ctx context.Context, engine templateEngine, fetch templates.Fetcher, project string, deployment string, input string, imports map[string]string, cause string) (*templateApply, error) {
	files := make(map[string][]byte, len(imports))
	for name, content := range imports {
		files[name] = []byte(content)
	}

	// The engine's limits hold per template; this bounds the whole expansion, so that a
	// config of many slow templates cannot hold a request (and a core) for long.
	ctx, cancel := context.WithTimeout(ctx, expansionBudget)
	defer cancel()
	exp, err := engineOrDefault(engine).Expand(ctx, []byte(input), files, templates.Options{
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

	t := &templateApply{cause: cause, input: input, imports: imports, shapes: shapes, order: order, warnings: exp.Warnings, by: requestorFromContext(ctx)}
	if t.imports == nil {
		t.imports = map[string]string{}
	}

	err = convertJSON(exp.Config, &t.config)
	if err == nil {
		err = convertJSON(exp.Layout, &t.layout)
	}

	if err != nil {
		return nil, badRequest(fmt.Errorf("the expanded config cannot be stored: %w", err))
	}

	return t, nil
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

// convertJSON copies the engine's config and layout into the API's types, which have the
// same JSON form (shared/api cannot import the engine, which imports it).
func convertJSON(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}

	return json.Unmarshal(data, to)
}

// shapePlan is what applying a config does to a deployment's shapes.
type shapePlan struct {
	create    []api.DeploymentShapesPost
	update    []shapeUpdate
	delete    []shapeDeletion
	unchanged []string
	unmanaged []string
}

type shapeUpdate struct {
	id      int64
	before  api.DeploymentShape
	put     api.DeploymentShapePut
	changes []api.DeploymentFieldChange
}

type shapeDeletion struct {
	id        int64
	name      string
	instances int
}

// planShapes compares the desired shapes with the deployment's. owned are the shapes the
// latest manifest made: those the config no longer has are deleted, while shapes no
// manifest made (created through the shapes API) are left alone. A desired shape that
// exists is updated when a writable field differs; sizes are never touched.
func planShapes(current []db.Shape, instances map[int64]int, owned map[string]bool, desired map[string]api.DeploymentShapePut, order []string) shapePlan {
	p := shapePlan{create: []api.DeploymentShapesPost{}, update: []shapeUpdate{}, delete: []shapeDeletion{}, unchanged: []string{}, unmanaged: []string{}}
	byName := make(map[string]db.Shape, len(current))
	for _, s := range current {
		byName[s.Name] = s
	}

	for _, name := range order {
		put, ok := desired[name]
		if !ok {
			continue
		}

		s, exists := byName[name]
		if !exists {
			p.create = append(p.create, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: name}, DeploymentShapePut: put})
			continue
		}

		changes := shapes.Changes(s.Writable(), put)
		if len(changes) == 0 {
			p.unchanged = append(p.unchanged, name)
			continue
		}

		p.update = append(p.update, shapeUpdate{id: s.ID, before: s.DeploymentShape, put: put, changes: changes})
	}

	for _, s := range current {
		_, wanted := desired[s.Name]
		switch {
		case wanted:
		case owned[s.Name]:
			p.delete = append(p.delete, shapeDeletion{id: s.ID, name: s.Name, instances: instances[s.ID]})
		default:
			p.unmanaged = append(p.unmanaged, s.Name)
		}
	}

	sort.Slice(p.delete, func(i, j int) bool { return p.delete[i].name < p.delete[j].name })
	sort.Strings(p.unmanaged)
	return p
}

// plan reads the deployment's shapes, their instance counts and the latest manifest, and
// plans the config against them.
func (t *templateApply) plan(ctx context.Context, tx *sql.Tx, deploymentID int64) (shapePlan, error) {
	current, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: deploymentID})
	if err != nil {
		return shapePlan{}, err
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: deploymentID})
	if err != nil {
		return shapePlan{}, err
	}

	instances := map[int64]int{}
	for _, row := range rows {
		instances[row.ShapeID]++
	}

	latest, err := db.GetLatestManifest(ctx, tx, deploymentID)
	if err != nil {
		return shapePlan{}, err
	}

	owned := map[string]bool{}
	if latest != nil {
		for _, r := range latest.ExpandedConfig.Resources {
			if r.Type == templates.ShapeType {
				owned[r.Name] = true
			}
		}
	}

	return planShapes(current, instances, owned, t.shapes, t.order), nil
}

// apply plans the config inside the transaction and applies it: deletes, updates, creates,
// and the manifest recording it. It is safe to run again when the transaction is retried.
// A nil template applies nothing.
func (t *templateApply) apply(ctx context.Context, tx *sql.Tx, deploymentID int64) error {
	if t == nil {
		return nil
	}

	p, err := t.plan(ctx, tx, deploymentID)
	if err != nil {
		return err
	}

	// The manifest is named first: the shape revisions it makes say "apply manifest-N".
	name, err := db.CreateManifest(ctx, tx, deploymentID, api.DeploymentManifest{
		Cause:          t.cause,
		InputConfig:    t.input,
		Imports:        t.imports,
		ExpandedConfig: t.config,
		Layout:         t.layout,
	})
	if err != nil {
		return err
	}

	args := rollout.RevisionArgs{Cause: rollout.CauseApplyManifest(name), By: t.by}
	t.revised = map[string]rollout.Revised{}
	for _, d := range p.delete {
		if d.instances > 0 {
			return lxdapi.StatusErrorf(http.StatusConflict, "shape %q is no longer in the config and still has %d instances: delete them first, or apply with force to delete them with it", d.name, d.instances)
		}

		err = db.DeleteShape(ctx, tx, d.id)
		if err != nil {
			return err
		}
	}

	for _, u := range p.update {
		before, err := rollout.ShapeByID(ctx, tx, deploymentID, u.id)
		if err != nil {
			return err
		}

		err = db.UpdateShape(ctx, tx, u.id, u.put)
		if err != nil {
			return err
		}

		t.revised[u.before.Name], err = rollout.RecordRevision(ctx, tx, deploymentID, u.id, before, u.put, args)
		if err != nil {
			return err
		}
	}

	for _, c := range p.create {
		id, err := db.CreateShape(ctx, tx, deploymentID, c)
		if err != nil {
			return err
		}

		_, err = rollout.RecordRevision(ctx, tx, deploymentID, id, nil, c.DeploymentShapePut, args)
		if err != nil {
			return err
		}
	}

	t.done = &p
	t.manifest = name
	return nil
}

// planAPI is the plan as a dry run answers it.
func (t *templateApply) planAPI(p shapePlan) api.DeploymentTemplatePlan {
	result := api.DeploymentTemplatePlan{
		Create:         p.create,
		Update:         make([]api.DeploymentShapeChange, 0, len(p.update)),
		Delete:         make([]api.DeploymentShapeDeletion, 0, len(p.delete)),
		Unchanged:      p.unchanged,
		Unmanaged:      p.unmanaged,
		ExpandedConfig: t.config,
		Layout:         t.layout,
		Warnings:       t.warnings,
	}

	for _, u := range p.update {
		result.Update = append(result.Update, api.DeploymentShapeChange{Name: u.before.Name, Changes: u.changes})
	}

	for _, d := range p.delete {
		result.Delete = append(result.Delete, api.DeploymentShapeDeletion{Name: d.name, Instances: d.instances})
	}

	return result
}

// dryRunParam reports whether ?dry-run=1 (or true) was given.
func dryRunParam(r *http.Request) bool {
	dryRun, _ := strconv.ParseBool(r.URL.Query().Get("dry-run"))
	return dryRun
}

var errNoTemplate = errors.New("nothing to preview or apply: send the config in template (template_imports and ?dry-run=1 go with it)")

// templateForCreate expands the template of a create request. It answers (a non-nil
// response) a bad template, and a dry run with its plan; otherwise the template (nil when
// the request has none) is applied in the transaction that creates the deployment.
func (a deploymentsAPI) templateForCreate(r *http.Request, project string, req api.DeploymentsPost) (*templateApply, response.Response) {
	dryRun := dryRunParam(r)
	if req.Template == "" {
		if dryRun || len(req.TemplateImports) > 0 {
			return nil, response.SmartError(badRequest(errNoTemplate))
		}

		return nil, nil
	}

	err := validate.Name("deployment", req.Name)
	if err != nil {
		return nil, response.SmartError(badRequest(err))
	}

	expandStart := time.Now()
	t, err := expandTemplate(r.Context(), a.engine, a.fetcher, project, req.Name, req.Template, req.TemplateImports, causeCreate)
	a.lifecycle.metrics.TemplateExpansion(time.Since(expandStart))
	if err != nil {
		return nil, response.SmartError(err)
	}

	if !dryRun {
		return t, nil
	}

	// A dry run fails where the create would.
	put := req.DeploymentPut
	if put.Config == nil {
		put.Config = map[string]string{}
	}

	err = validate.Deployment(put)
	if err != nil {
		return nil, response.SmartError(badRequest(err))
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.GetDeploymentID(ctx, tx, project, req.Name)
		if err == nil {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q already exists in project %q", req.Name, project)
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return nil
		}

		return err
	})
	if err != nil {
		return nil, response.SmartError(err)
	}

	return nil, response.SyncResponse(t.planAPI(planShapes(nil, nil, nil, t.shapes, t.order)))
}

// templateForUpdate expands the template of a PUT. Like templateForCreate it answers a bad
// template and a dry run; with ?force=1 it deletes the instances of the shapes the config
// drops before the update's transaction applies the rest. PATCH never applies a template.
func (a deploymentsAPI) templateForUpdate(r *http.Request, ref refs.DeploymentRef, body []byte, patch bool) (*templateApply, response.Response) {
	var probe api.DeploymentPut
	err := unmarshalBody(body, &probe)
	if err != nil {
		return nil, response.SmartError(err)
	}

	dryRun := dryRunParam(r)
	if probe.Template == "" && len(probe.TemplateImports) == 0 && !dryRun {
		return nil, nil
	}

	if patch {
		return nil, response.SmartError(badRequest(errors.New("PATCH does not apply templates: send the config with PUT, which replaces the deployment's writable fields")))
	}

	if probe.Template == "" {
		return nil, response.SmartError(badRequest(errNoTemplate))
	}

	expandStart := time.Now()
	t, err := expandTemplate(r.Context(), a.engine, a.fetcher, ref.Project, ref.Name, probe.Template, probe.TemplateImports, causeUpdate)
	a.lifecycle.metrics.TemplateExpansion(time.Since(expandStart))
	if err != nil {
		return nil, response.SmartError(err)
	}

	resp := a.prepareTemplate(r, ref, t, func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		err = response.CheckETag(r, current.Writable())
		if err != nil {
			return err
		}

		if probe.Config == nil {
			probe.Config = map[string]string{}
		}

		return badRequest(validate.Deployment(probe))
	})

	return t, resp
}

// prepareTemplate plans t against an existing deployment after check (which may refuse the
// request). A dry run gets the plan as its answer; with ?force=1 the instances of the
// shapes the plan deletes are deleted now, while the shapes themselves go in the
// transaction that applies the config, which also refuses any instance launched since.
func (a deploymentsAPI) prepareTemplate(r *http.Request, ref refs.DeploymentRef, t *templateApply, check func(ctx context.Context, tx *sql.Tx) error) response.Response {
	var p shapePlan
	err := a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
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

		p, err = t.plan(ctx, tx, id)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if dryRunParam(r) {
		return response.SyncResponse(t.planAPI(p))
	}

	if !forceParam(r) {
		return nil
	}

	for _, d := range p.delete {
		if d.instances == 0 {
			continue
		}

		shapeID := d.id
		err = fleet.DeleteWithInstances(r.Context(), a.db, a.lxd, a.sockets, requestorFromContext(r.Context()), fmt.Sprintf("shape %q", d.name), true,
			func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
				return db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
			},
			func(ctx context.Context, tx *sql.Tx) error { return nil })
		if err != nil {
			return response.SmartError(err)
		}
	}

	return nil
}

// announceTemplate sends the lifecycle events of an applied template once its transaction
// committed, and asks the governor to move shapes whose new bounds left them outside.
func (a deploymentsAPI) announceTemplate(r *http.Request, project string, deployment string, deploymentID int64, t *templateApply) {
	if t == nil || t.done == nil {
		return
	}

	by := requestorFromContext(r.Context())
	ref := refs.DeploymentRef{Project: project, Name: deployment}
	for _, d := range t.done.delete {
		a.lifecycle.shapeDeleted(by, ref, deploymentID, d.name)
	}

	for _, u := range t.done.update {
		a.lifecycle.shapeUpdated(r.Context(), by, ref, deploymentID, u.before, u.put)
		a.lifecycle.shapeRevised(by, refs.ShapeRef{DeploymentRef: ref, Shape: u.before.Name}, deploymentID, t.revised[u.before.Name])
	}

	for _, c := range t.done.create {
		a.lifecycle.shapeCreated(r.Context(), by, ref, deploymentID, c.Name, c.DeploymentShapePut)
	}

	a.lifecycle.emit(by, project, deploymentID, lifecycleManifestCreated, api.DeploymentManifestURL(project, deployment, t.manifest))
}
