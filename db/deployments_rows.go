package db

import (
	"context"
	"database/sql"
	"fmt"
)

// GetDeploymentRows returns every deployment's own fields and config, by project and name,
// without what GetDeployments adds (shapes, the URLs of all instances, orphans): the
// background loops need only where a deployment lives and how it is configured, and
// GetDeployments read every instance row each time (issue 20).
func GetDeploymentRows(ctx context.Context, tx *sql.Tx) ([]Deployment, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, project, name, description, governor_webhook_url FROM deployments ORDER BY project, name")
	if err != nil {
		return nil, fmt.Errorf("read deployments: %w", err)
	}

	defer func() { _ = rows.Close() }()
	deployments := []Deployment{}
	for rows.Next() {
		var d Deployment
		err = rows.Scan(&d.ID, &d.Project, &d.Name, &d.Description, &d.GovernorWebhookURL)
		if err != nil {
			return nil, fmt.Errorf("read deployments: %w", err)
		}

		deployments = append(deployments, d)
	}

	err = rows.Err()
	if err != nil || len(deployments) == 0 {
		return deployments, err
	}

	_ = rows.Close()
	configs, err := getConfigs(ctx, tx, deploymentsConfig)
	if err != nil {
		return nil, err
	}

	for i := range deployments {
		deployments[i].Config = configs[deployments[i].ID]
		if deployments[i].Config == nil {
			deployments[i].Config = map[string]string{}
		}
	}

	return deployments, nil
}
