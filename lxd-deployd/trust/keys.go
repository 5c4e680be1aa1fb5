package trust

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Keys are the deployment keys: each binds a deployments certificate to one deployment,
// read-only or admin. The writes return the deployment's id, for the events they cause.
type Keys struct {
	DB *db.Cluster
}

// withKey runs f in a transaction with the deployment's id and its key of that name.
func (k Keys) withKey(ctx context.Context, ref refs.DeploymentRef, name string, f func(ctx context.Context, tx *sql.Tx, deploymentID int64, key *db.Key) error) error {
	return k.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		key, err := db.GetKey(ctx, tx, deploymentID, name)
		if err != nil {
			return err
		}

		return f(ctx, tx, deploymentID, key)
	})
}

// List returns the deployment's keys.
func (k Keys) List(ctx context.Context, ref refs.DeploymentRef) ([]db.Key, error) {
	var keys []db.Key
	err := k.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		keys, err = db.GetKeys(ctx, tx, db.KeyFilter{DeploymentID: id})
		return err
	})

	return keys, err
}

// Create validates and stores a new deployment key; the role defaults to read-only.
func (k Keys) Create(ctx context.Context, ref refs.DeploymentRef, req api.DeploymentKeysPost) (int64, error) {
	err := validate.Name("deployment key", req.Name)
	if err != nil {
		return 0, badRequest(err)
	}

	if req.Role == "" {
		req.Role = api.DeploymentKeyRoleReadOnly
	}

	err = validate.Role(req.Role)
	if err != nil {
		return 0, badRequest(err)
	}

	err = validate.Fingerprint(req.CertificateFingerprint)
	if err != nil {
		return 0, badRequest(err)
	}

	var id int64
	err = k.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		_, err = db.CreateKey(ctx, tx, id, req)
		return err
	})

	return id, err
}

// Get returns the deployment's key of that name.
func (k Keys) Get(ctx context.Context, ref refs.DeploymentRef, name string) (*db.Key, error) {
	var key *db.Key
	err := k.withKey(ctx, ref, name, func(ctx context.Context, tx *sql.Tx, deploymentID int64, found *db.Key) error {
		key = found
		return nil
	})

	return key, err
}

// Update sets a key's description and role to what decode makes of its writable fields
// (the request's body over them, once its ETag matches); the role defaults to read-only.
func (k Keys) Update(ctx context.Context, ref refs.DeploymentRef, name string, decode func(current api.DeploymentKeyPut) (api.DeploymentKeyPut, error)) (int64, error) {
	var deploymentID int64
	err := k.withKey(ctx, ref, name, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		put, err := decode(key.Writable())
		if err != nil {
			return err
		}

		if put.Role == "" {
			put.Role = api.DeploymentKeyRoleReadOnly
		}

		err = validate.Role(put.Role)
		if err != nil {
			return badRequest(err)
		}

		return db.UpdateKey(ctx, tx, key.ID, put)
	})

	return deploymentID, err
}

// Rename gives a key a new name.
func (k Keys) Rename(ctx context.Context, ref refs.DeploymentRef, name string, newName string) (int64, error) {
	err := validate.Name("deployment key", newName)
	if err != nil {
		return 0, badRequest(err)
	}

	var deploymentID int64
	err = k.withKey(ctx, ref, name, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		return db.RenameKey(ctx, tx, id, key.ID, newName)
	})

	return deploymentID, err
}

// Delete removes a key: its certificate loses the access it gave at once.
func (k Keys) Delete(ctx context.Context, ref refs.DeploymentRef, name string) (int64, error) {
	var deploymentID int64
	err := k.withKey(ctx, ref, name, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		return db.DeleteKey(ctx, tx, key.ID)
	})

	return deploymentID, err
}
