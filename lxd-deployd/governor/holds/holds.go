// Package holds is the rule of one active governor per deployment: a governor registers
// (Claim) and renews its hold; while the hold lasts another governor's registration is
// refused unless it takes over, and other deployment keys may not change the deployment's
// instances (CheckActive). The rule sits on top of the keys' roles, never replaces one.
package holds

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// One active governor per deployment, as seed 004's review decided. A governor registers
// with PUT .../governor and renews before its ttl runs out; while its hold lasts, another
// governor's registration is refused (naming the holder) unless it takes over explicitly,
// and other deployment keys may not change the deployment's instances. The hold adds a
// rule on top of the keys' roles, never replaces one: a read-only key can neither register
// nor act, and admins (the management API) are not governors and are never held off.

// Claim decides a registration. current is the deployment's hold row (nil when none); it
// holds nothing once expired or when its holder lost its admin key (holderValid false).
// The same governor (certificate and name) renews and keeps its since; anyone else is
// refused while the hold lasts, unless takeover.
func Claim(ref refs.DeploymentRef, current *db.GovernorHold, holderValid bool, claim db.GovernorHold, takeover bool, now time.Time, ttl time.Duration) (db.GovernorHold, error) {
	active := current.ActiveAt(now) && holderValid
	same := current != nil && current.Fingerprint == claim.Fingerprint && current.Governor == claim.Governor
	if active && !same && !takeover {
		return db.GovernorHold{}, lxdapi.StatusErrorf(http.StatusConflict, "%s: stop that governor, wait until its hold expires, or take the deployment over explicitly (\"takeover\": true; lxd-deploy governor run --takeover)", GovernedBy(ref, current))
	}

	next := claim
	next.Since = now
	if active && same {
		next.Since = current.Since
	}

	next.RenewedAt = now
	next.ExpiresAt = now.Add(ttl)
	return next, nil
}

// GovernedBy says who holds a deployment, for the errors that refuse someone else.
func GovernedBy(ref refs.DeploymentRef, h *db.GovernorHold) string {
	who := "an admin"
	if h.KeyName != "" {
		who = fmt.Sprintf("key %q", h.KeyName)
	}

	return fmt.Sprintf("deployment %q is governed by governor %q (%s) since %s, its hold lasting until %s unless renewed", ref.Name, h.Governor, who, h.Since.UTC().Format(time.RFC3339), h.ExpiresAt.UTC().Format(time.RFC3339))
}

// Read returns the deployment's hold and whether its holder may still hold it: an
// admin always, a deployments certificate while it has an admin key on the deployment
// (deleting the key or the certificate frees the deployment at once).
func Read(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, deploymentID int64) (*db.GovernorHold, bool, error) {
	hold, err := db.GetGovernorHold(ctx, tx, deploymentID)
	if err != nil || hold == nil {
		return hold, false, err
	}

	if hold.KeyName == "" {
		return hold, true, nil
	}

	role, _, err := db.GetCertificateRole(ctx, tx, hold.Fingerprint, ref.Project, ref.Name)
	return hold, role == api.DeploymentKeyRoleAdmin, err
}

// CheckActive refuses a deployment key's change to the deployment's instances while
// another governor holds it: only the holder's certificate (fingerprint) among deployment
// keys may act. Admins are not held off and do not ask.
func CheckActive(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, fingerprint string, now time.Time) error {
	id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
	if err != nil {
		return err
	}

	hold, valid, err := Read(ctx, tx, ref, id)
	if err != nil {
		return err
	}

	if !valid || !hold.ActiveAt(now) || hold.Fingerprint == fingerprint {
		return nil
	}

	return lxdapi.StatusErrorf(http.StatusConflict, "%s: only the active governor changes its instances; run this as that governor, or take the deployment over (PUT .../governor with \"takeover\": true; lxd-deploy governor run --takeover)", GovernedBy(ref, hold))
}
