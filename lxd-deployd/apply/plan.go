package apply

import (
	"context"
	"database/sql"
	"sort"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
)

// Plan is what applying a config does to a deployment's shapes.
type Plan struct {
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
func planShapes(current []db.Shape, instances map[int64]int, owned map[string]bool, desired map[string]api.DeploymentShapePut, order []string) Plan {
	p := Plan{create: []api.DeploymentShapesPost{}, update: []shapeUpdate{}, delete: []shapeDeletion{}, unchanged: []string{}, unmanaged: []string{}}
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
func (c *Config) plan(ctx context.Context, tx *sql.Tx, deploymentID int64) (Plan, error) {
	current, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: deploymentID})
	if err != nil {
		return Plan{}, err
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: deploymentID})
	if err != nil {
		return Plan{}, err
	}

	instances := map[int64]int{}
	for _, row := range rows {
		instances[row.ShapeID]++
	}

	latest, err := db.GetLatestManifest(ctx, tx, deploymentID)
	if err != nil {
		return Plan{}, err
	}

	owned := map[string]bool{}
	if latest != nil {
		for _, r := range latest.ExpandedConfig.Resources {
			if r.Type == templates.ShapeType {
				owned[r.Name] = true
			}
		}
	}

	return planShapes(current, instances, owned, c.shapes, c.order), nil
}

// PlanAPI is the plan as a dry run answers it.
func (c *Config) PlanAPI(p Plan) api.DeploymentTemplatePlan {
	result := api.DeploymentTemplatePlan{
		Create:         p.create,
		Update:         make([]api.DeploymentShapeChange, 0, len(p.update)),
		Delete:         make([]api.DeploymentShapeDeletion, 0, len(p.delete)),
		Unchanged:      p.unchanged,
		Unmanaged:      p.unmanaged,
		ExpandedConfig: c.config,
		Layout:         c.layout,
		Warnings:       c.warnings,
	}

	for _, u := range p.update {
		result.Update = append(result.Update, api.DeploymentShapeChange{Name: u.before.Name, Changes: u.changes})
	}

	for _, d := range p.delete {
		result.Delete = append(result.Delete, api.DeploymentShapeDeletion{Name: d.name, Instances: d.instances})
	}

	return result
}
