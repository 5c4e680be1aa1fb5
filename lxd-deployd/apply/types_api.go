package apply

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the types API (/1.0/types, seed 000's) shows: the resource types in the layouts of
// the latest manifests of a project's deployments, and where each is used.

// latestLayouts reads the layouts of the latest manifests of a project's deployments.
func latestLayouts(ctx context.Context, cluster *db.Cluster, project string) ([]db.ManifestLayout, error) {
	var layouts []db.ManifestLayout
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		layouts, err = db.GetLatestLayouts(ctx, tx, project)
		return err
	})

	return layouts, err
}

// ProjectTypes are the types in use in a project (Types).
func ProjectTypes(ctx context.Context, cluster *db.Cluster, project string) ([]api.TemplateType, error) {
	layouts, err := latestLayouts(ctx, cluster, project)
	if err != nil {
		return nil, err
	}

	return Types(layouts), nil
}

// ProjectType is one type in use in a project; a type nobody uses is not found.
func ProjectType(ctx context.Context, cluster *db.Cluster, project string, typ string) (api.TemplateType, error) {
	types, err := ProjectTypes(ctx, cluster, project)
	if err != nil {
		return api.TemplateType{}, err
	}

	for _, t := range types {
		if t.Name == typ {
			return t, nil
		}
	}

	return api.TemplateType{}, lxdapi.StatusErrorf(http.StatusNotFound, "type %q is not used by the latest manifest of any deployment of project %q", typ, project)
}

// ProjectTypeInstances are where a type is used in a project (TypeInstances).
func ProjectTypeInstances(ctx context.Context, cluster *db.Cluster, project string, typ string) ([]api.TemplateTypeInstance, error) {
	layouts, err := latestLayouts(ctx, cluster, project)
	if err != nil {
		return nil, err
	}

	return TypeInstances(layouts, typ), nil
}
