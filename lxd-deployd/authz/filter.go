package authz

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// filterTTL is how long a deployments certificate's filter trusts its last read of the
// keys: revocation reaches open event streams within it.
const filterTTL = time.Second

// Filter returns what events and operations the caller may see: everything for admins,
// the one deployment of a deployer, the deployments it holds keys on for deployments
// certificates (re-read every second so revocation reaches open event streams), nothing
// otherwise.
func (c Checker) Filter(caller *auth.Caller) events.Filter {
	if caller.IsAdmin() {
		return func(int64) bool { return true }
	}

	if caller.Trusted && caller.CertificateType == auth.CertificateTypeDeployer {
		id := c.deployerDeployment(context.Background(), caller)
		return func(deploymentID int64) bool { return deploymentID != 0 && deploymentID == id }
	}

	if !caller.Trusted || caller.CertificateType != api.CertificateTypeDeployments {
		return func(int64) bool { return false }
	}

	var mu sync.Mutex
	var allowed map[int64]bool
	var readAt time.Time
	return func(deploymentID int64) bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(readAt) > filterTTL {
			allowed = map[int64]bool{}
			readAt = time.Now()
			_ = c.DB.Read(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				return c.readAllowed(ctx, tx, caller, allowed)
			})
		}

		return deploymentID != 0 && allowed[deploymentID]
	}
}

// readAllowed fills allowed with the deployments a deployments certificate holds keys on.
func (c Checker) readAllowed(ctx context.Context, tx *sql.Tx, caller *auth.Caller, allowed map[int64]bool) error {
	keys, err := db.GetKeys(ctx, tx, db.KeyFilter{Fingerprint: caller.Fingerprint})
	if err != nil {
		return err
	}

	audienceID := int64(0)
	if caller.Audience != "" {
		// A governor token is good for one deployment only, and only from inside it
		// (unless a shape lets outsiders in), as on the other routes.
		project, name, _ := cutAudience(caller.Audience)
		audienceID, err = db.GetDeploymentID(ctx, tx, project, name)
		if err != nil {
			return err
		}

		err = CheckGovernorScope(ctx, tx, caller, refs.DeploymentRef{Project: project, Name: name}, "")
		if err != nil {
			return err
		}
	}

	for _, k := range keys {
		if audienceID == 0 || k.DeploymentID == audienceID {
			allowed[k.DeploymentID] = true
		}
	}

	return nil
}
