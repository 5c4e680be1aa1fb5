package trust

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestKeys: a key is validated, read-only unless asked, changed, renamed and deleted in
// its deployment; the writes name the deployment for their events.
func TestKeys(t *testing.T) {
	keys := Keys{DB: dbtest.Open(t)}
	ctx := context.Background()
	fingerprint := strings.Repeat("a", 64)
	var depID int64
	err := keys.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		depID, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeDeployments, Name: "gov"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	dep1 := refs.DeploymentRef{Project: "default", Name: "dep1"}
	post := func(name, role, fingerprint string) api.DeploymentKeysPost {
		return api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: name}, DeploymentKeyPut: api.DeploymentKeyPut{Role: role}, CertificateFingerprint: fingerprint}
	}

	_, err = keys.Create(ctx, dep1, post("bad name", "", fingerprint))
	wantErr(t, "a bad name", err, 400, "")
	_, err = keys.Create(ctx, dep1, post("k1", "root", fingerprint))
	wantErr(t, "a bad role", err, 400, "")
	_, err = keys.Create(ctx, dep1, post("k1", "", "abc"))
	wantErr(t, "a bad fingerprint", err, 400, "")
	_, err = keys.Create(ctx, refs.DeploymentRef{Project: "default", Name: "nope"}, post("k1", "", fingerprint))
	wantErr(t, "an unknown deployment", err, 404, "")
	id, err := keys.Create(ctx, dep1, post("k1", "", fingerprint))
	if err != nil || id != depID {
		t.Fatalf("creating k1: %d %v", id, err)
	}

	key, err := keys.Get(ctx, dep1, "k1")
	if err != nil || key.Role != api.DeploymentKeyRoleReadOnly || key.CertificateFingerprint != fingerprint {
		t.Fatalf("k1 %+v: %v", key, err)
	}

	set := func(put api.DeploymentKeyPut) func(api.DeploymentKeyPut) (api.DeploymentKeyPut, error) {
		return func(api.DeploymentKeyPut) (api.DeploymentKeyPut, error) { return put, nil }
	}

	_, err = keys.Update(ctx, dep1, "k1", set(api.DeploymentKeyPut{Role: "root"}))
	wantErr(t, "a bad role", err, 400, "")
	id, err = keys.Update(ctx, dep1, "k1", set(api.DeploymentKeyPut{Description: "governor", Role: api.DeploymentKeyRoleAdmin}))
	if err != nil || id != depID {
		t.Fatalf("updating k1: %v", err)
	}

	_, err = keys.Rename(ctx, dep1, "k1", "bad name")
	wantErr(t, "a bad new name", err, 400, "")
	_, err = keys.Rename(ctx, dep1, "k1", "k2")
	wantErr(t, "renaming", err, 0, "")
	_, err = keys.Get(ctx, dep1, "k1")
	wantErr(t, "the old name", err, 404, "")
	list, err := keys.List(ctx, dep1)
	if err != nil || len(list) != 1 || list[0].Name != "k2" || list[0].Role != api.DeploymentKeyRoleAdmin || list[0].Description != "governor" {
		t.Fatalf("keys %+v: %v", list, err)
	}

	// Update with no role makes the key read-only again.
	_, err = keys.Update(ctx, dep1, "k2", set(api.DeploymentKeyPut{}))
	wantErr(t, "clearing the role", err, 0, "")
	key, err = keys.Get(ctx, dep1, "k2")
	if err != nil || key.Role != api.DeploymentKeyRoleReadOnly {
		t.Fatalf("k2 %+v: %v", key, err)
	}

	id, err = keys.Delete(ctx, dep1, "k2")
	if err != nil || id != depID {
		t.Fatalf("deleting k2: %v", err)
	}

	_, err = keys.Delete(ctx, dep1, "k2")
	wantErr(t, "deleting again", err, 404, "")
}
