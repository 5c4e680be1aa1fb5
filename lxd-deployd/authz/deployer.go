package authz

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A custom rollout's deployer, and a rollout's pre or post hook
// (doc/rollouts.md#custom-deployers, #hooks), holds a credential the daemon made for it: a
// bearer secret, of which only a hash is kept, read on every request. It is good only
// through the deployer's own governor socket (the transport names the instance), only
// while its rollout runs and the deployer has not ended, and only on the governor API of
// the rollout's shape: the same routes, role checks and bound checks as any governor's.

// ErrDeployerRevoked refuses a credential that is unknown, revoked or out of its scope in
// time; it does not say which, so that nothing can be learnt by guessing.
var ErrDeployerRevoked = lxdapi.StatusErrorf(http.StatusUnauthorized, "deployer credential refused: it is unknown or revoked (the deployer ended, or its rollout is no longer running)")

// AuthenticateDeployer turns a deployer's credential, presented through the governor
// transport conn, into a caller scoped to its shape.
func AuthenticateDeployer(ctx context.Context, cluster *db.Cluster, conn *governor.Conn, raw string) (*auth.Caller, error) {
	id, secret, ok := rollout.ParseCredential(raw)
	if !ok {
		return nil, ErrDeployerRevoked
	}

	var scope *db.DeployerScope
	var kind string
	err := cluster.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		kind, err = db.CheckDeployerCredential(ctx, tx, id, secret)
		if err != nil || kind == "" {
			return errors.Join(err, ErrDeployerRevoked)
		}

		scope, err = db.GetDeployerScope(ctx, tx, id, kind)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, ErrDeployerRevoked) {
		return nil, ErrDeployerRevoked
	}

	if err != nil {
		return nil, err
	}

	if scope.Status != api.RolloutRunning {
		return nil, ErrDeployerRevoked
	}

	if conn.Instance != scope.Instance || conn.Project != scope.InstanceProj || conn.CID != 0 {
		return nil, lxdapi.StatusErrorf(http.StatusUnauthorized, "deployer credential refused: it is good only from deployer instance %q", scope.Instance)
	}

	return &auth.Caller{
		Protocol: auth.ProtocolGovernor, Trusted: true, CertificateType: auth.CertificateTypeDeployer,
		Name:     fmt.Sprintf("%s of rollout %d of %s", transientLabel(kind), scope.Rollout, scope.Shape),
		Audience: auth.TokenAudience(scope.Project, scope.Deployment), Subject: scope.Instance,
		Instance: conn.Instance, InstanceProject: conn.Project, Shape: scope.Shape,
	}, nil
}

// deployerRole is a deployer's role on the request's deployment: admin on its own shape,
// nothing anywhere else (the deployment's own GET, other shapes, other deployments).
func deployerRole(caller *auth.Caller, req Request) (string, error) {
	ref, err := req.Deployment()
	if err != nil {
		return "", err
	}

	if caller.Audience != auth.TokenAudience(ref.Project, ref.Name) {
		return "", forbidden("this deployer's credential is for shape %s of %s: it may not act on deployment %q in project %q", caller.Shape, strings.TrimPrefix(caller.Audience, auth.TokenAudiencePrefix), ref.Name, ref.Project)
	}

	shape := req.Shape()
	if shape != caller.Shape {
		if shape == "" {
			return "", forbidden("this deployer's credential is for shape %s only: read .../shapes/%s instead of the whole deployment", caller.Shape, caller.Shape)
		}

		return "", forbidden("this deployer's credential is for shape %s: it may not act on shape %s", caller.Shape, shape)
	}

	return api.DeploymentKeyRoleAdmin, nil
}

// deployerDeployment is the id of the one deployment a deployer sees the events and
// operations of.
func (c Checker) deployerDeployment(ctx context.Context, caller *auth.Caller) int64 {
	var id int64
	project, name, _ := cutAudience(caller.Audience)
	_ = c.DB.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, err = db.GetDeploymentID(ctx, tx, project, name)
		return err
	})

	return id
}

// cutAudience splits a token audience into project and deployment.
func cutAudience(audience string) (string, string, bool) {
	return strings.Cut(strings.TrimPrefix(audience, auth.TokenAudiencePrefix), "/")
}

// transientLabel names a rollout's transient instance by its kind.
func transientLabel(kind string) string {
	if kind == db.KindDeployer {
		return "deployer"
	}

	return kind + " hook"
}
