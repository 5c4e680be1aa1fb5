package fleet

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRecordActivityResolvesKey (issue 32): an entry whose requestor is a deployments
// certificate over HTTPS without its key resolved (a governor's failed launch) is the
// governor's, not an admin's, so it cannot push an admin's entries out of activity.keep.
func TestRecordActivityResolvesKey(t *testing.T) {
	c := dbtest.Open(t)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		const fingerprint = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeDeployments, Name: "gov-cert", Certificate: "x"})
		if err != nil {
			return err
		}

		_, err = db.CreateKey(ctx, tx, deploymentID, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "gov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: fingerprint})
		if err != nil {
			return err
		}

		err = RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: "web", Action: "scale-down", Requestor: api.DeploymentRequestor{Protocol: "tls", Name: "gov-cert", Fingerprint: fingerprint}, Why: "launch of web-1 failed"})
		if err != nil {
			return err
		}

		entries, err := db.GetActivity(ctx, tx, db.ActivityFilter{DeploymentID: deploymentID})
		if err != nil {
			return err
		}

		if len(entries) != 1 || entries[0].Who != "governor" || entries[0].Requestor.Key != "gov" {
			t.Fatalf("entries %+v: want one by the governor through key gov", entries)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
