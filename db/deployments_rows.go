package db

import (
	"context"
	"database/sql"
)

// GetDeploymentRows returns every deployment's own fields and config, by project and name,
// without what GetDeployments adds (shapes, the URLs of all instances, orphans): the
// background loops need only where a deployment lives and how it is configured, and
// GetDeployments read every instance row each time (issue 20).
func GetDeploymentRows(ctx context.Context, tx *sql.Tx) ([]Deployment, error) {
	return deploymentRows(ctx, tx, DeploymentFilter{})
}
