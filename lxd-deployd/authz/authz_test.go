package authz

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// path is a parsed request path for the checks.
type path struct {
	deployment refs.DeploymentRef
	shape      string
	instance   string
	err        error
}

func (p path) Deployment() (refs.DeploymentRef, error) { return p.deployment, p.err }
func (p path) Shape() string                           { return p.shape }
func (p path) Instance() (refs.InstanceRef, error) {
	return refs.InstanceRef{ShapeRef: refs.ShapeRef{DeploymentRef: p.deployment, Shape: p.shape}, Instance: p.instance}, p.err
}

// wantErr checks err against a status (0: no error) and a part of its text.
func wantErr(t *testing.T, what string, err error, status int, text string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}

		return
	}

	if !lxdapi.StatusErrorCheck(err, status) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v, want a %d saying %q", what, err, status, text)
	}
}

var (
	unix       = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	client     = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeClient, Fingerprint: strings.Repeat("c", 64)}
	metrics    = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeMetrics}
	member     = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: auth.CertificateTypeMember, Name: "m2"}
	untrusted  = &auth.Caller{Protocol: auth.ProtocolTLS}
	readerCert = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeDeployments, Fingerprint: strings.Repeat("a", 64)}
	adminCert  = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeDeployments, Fingerprint: strings.Repeat("b", 64)}
)

// TestAdminAndTrusted: the route-level checks, by certificate type.
func TestAdminAndTrusted(t *testing.T) {
	tests := []struct {
		name                 string
		caller               *auth.Caller
		admin, trusted       int
		adminText, trustText string
	}{
		{"unix", unix, 0, 0, "", ""},
		{"client", client, 0, 0, "", ""},
		{"metrics", metrics, 403, 403, "metrics certificate may only read /1.0/metrics", "metrics certificate may only read /1.0/metrics"},
		{"member", member, 403, 403, "internal member routes only", "internal member routes only"},
		{"deployments", readerCert, 403, 0, "may only act through deployment keys", ""},
		{"untrusted", untrusted, 403, 403, "(lxd-deploy config trust add)", "add this client's certificate to the trust store"},
	}

	for _, tt := range tests {
		wantErr(t, tt.name+" as admin", Admin(tt.caller), tt.admin, tt.adminText)
		wantErr(t, tt.name+" as trusted", Trusted(tt.caller), tt.trusted, tt.trustText)
	}
}

// TestRefuseSessionCredentials: web sessions never change credentials; read-only ones do
// not read them either; anyone else is not this rule's business.
func TestRefuseSessionCredentials(t *testing.T) {
	session := &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeClient, Session: 7}
	readOnly := &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeClient, Session: 8, ReadOnly: true}
	wantErr(t, "client read", RefuseSessionCredentials(client, false), 0, "")
	wantErr(t, "client write", RefuseSessionCredentials(client, true), 0, "")
	wantErr(t, "session read", RefuseSessionCredentials(session, false), 0, "")
	wantErr(t, "session write", RefuseSessionCredentials(session, true), 403, "cannot change credentials")
	wantErr(t, "read-only session read", RefuseSessionCredentials(readOnly, false), 403, "read-only web session")
	wantErr(t, "read-only session write", RefuseSessionCredentials(readOnly, true), 403, "read-only web session")
}

// TestMember: only a member's own certificate, directly, in a cluster.
func TestMember(t *testing.T) {
	forwarded := *member
	forwarded.Via = "m3"
	wantErr(t, "member", Member(member, true, "/x"), 0, "")
	wantErr(t, "member, not clustered", Member(member, false, "/x"), 403, "only cluster members may use /x")
	wantErr(t, "forwarded", Member(&forwarded, true, "/x"), 403, "only cluster members")
	wantErr(t, "admin", Member(unix, true, "/x"), 403, "only cluster members")
}

// fixture is a deployment dep1 with shapes web and ext (governor.external), instance web-1
// in project default, a read-only key for readerCert and an admin key for adminCert.
func fixture(t *testing.T) (Checker, int64) {
	t.Helper()
	store := dbtest.Open(t)
	var id int64
	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, id, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3}})
		if err != nil {
			return err
		}

		_, err = db.CreateShape(ctx, tx, id, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "ext"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3, Config: map[string]string{ConfigGovernorExternal: "true"}}})
		if err != nil {
			return err
		}

		_, err = db.CreateInstance(ctx, tx, "default", shapeID, "web-1", "h", 1, "test", time.Now())
		if err != nil {
			return err
		}

		for _, c := range []struct {
			caller *auth.Caller
			role   string
		}{{readerCert, api.DeploymentKeyRoleReadOnly}, {adminCert, api.DeploymentKeyRoleAdmin}} {
			_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: c.caller.Fingerprint, Type: api.CertificateTypeDeployments, Name: c.role})
			if err != nil {
				return err
			}

			_, err = db.CreateKey(ctx, tx, id, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: c.role}, DeploymentKeyPut: api.DeploymentKeyPut{Role: c.role}, CertificateFingerprint: c.caller.Fingerprint})
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	return Checker{DB: store}, id
}

// governorOf is a governor's caller: adminCert's token for dep1 from instance in project.
func governorOf(instance string, project string) *auth.Caller {
	gov := *adminCert
	gov.Protocol = auth.ProtocolGovernor
	gov.Audience = auth.TokenAudience("default", "dep1")
	gov.Instance, gov.InstanceProject = instance, project
	return &gov
}

// TestDeploymentRoles: admins are admins everywhere; deployments certificates have their
// key's role on its deployment and nothing elsewhere (unknown deployments included, so
// existence does not leak); a governor acts from inside the deployment, or on a shape that
// lets outsiders in.
func TestDeploymentRoles(t *testing.T) {
	c, _ := fixture(t)
	ctx := context.Background()
	dep1 := path{deployment: refs.DeploymentRef{Project: "default", Name: "dep1"}, shape: "web", instance: "web-1"}
	other := path{deployment: refs.DeploymentRef{Project: "default", Name: "other"}}
	badPath := path{err: lxdapi.StatusErrorf(http.StatusNotFound, "deployment %q not found", "-")}

	wantErr(t, "unix reads", c.DeploymentRead(ctx, unix, dep1), 0, "")
	wantErr(t, "client changes", c.DeploymentAdmin(ctx, client, badPath), 0, "")
	wantErr(t, "untrusted, before the path", c.DeploymentRead(ctx, untrusted, badPath), 403, "not trusted")
	wantErr(t, "metrics", c.DeploymentRead(ctx, metrics, dep1), 403, "a metrics certificate may not read a deployment")
	wantErr(t, "metrics changes", c.DeploymentAdmin(ctx, metrics, dep1), 403, "may not change instances of a deployment")
	wantErr(t, "a bad path", c.DeploymentRead(ctx, readerCert, badPath), 404, "not found")
	wantErr(t, "read key reads", c.DeploymentRead(ctx, readerCert, dep1), 0, "")
	wantErr(t, "read key changes", c.DeploymentAdmin(ctx, readerCert, dep1), 403, "key on the deployment is read-only")
	wantErr(t, "admin key changes", c.DeploymentAdmin(ctx, adminCert, dep1), 0, "")
	wantErr(t, "no key", c.DeploymentRead(ctx, adminCert, other), 403, `no key on deployment "other" in project "default"`)

	wantErr(t, "governor inside", c.DeploymentAdmin(ctx, governorOf("web-1", "default"), dep1), 0, "")
	wantErr(t, "governor of another project", c.DeploymentAdmin(ctx, governorOf("web-1", "p2"), dep1), 403, `instance "web-1" is not a member of deployment "dep1"`)
	ext := dep1
	ext.shape = "ext"
	wantErr(t, "governor outside, external shape", c.DeploymentAdmin(ctx, governorOf("x", "default"), ext), 0, "")
	wantErr(t, "governor with another audience", c.DeploymentRead(ctx, governorOf("web-1", "default"), other), 403, "this token is for default/dep1")
}

// TestOwnInstance: a governor acts only on its own instance, the same name in another
// project is not its own; admins act on any.
func TestOwnInstance(t *testing.T) {
	c, _ := fixture(t)
	ctx := context.Background()
	own := path{deployment: refs.DeploymentRef{Project: "default", Name: "dep1"}, shape: "web", instance: "web-1"}
	another := own
	another.instance = "web-2"
	wantErr(t, "admin", c.OwnInstance(ctx, unix, another, "heal"), 0, "")
	wantErr(t, "admin key over TLS", c.OwnInstance(ctx, adminCert, another, "heal"), 0, "")
	wantErr(t, "own instance", c.OwnInstance(ctx, governorOf("web-1", "default"), own, "heal"), 0, "")
	wantErr(t, "another instance", c.OwnInstance(ctx, governorOf("web-1", "default"), another, "heal"), 403, `may heal, not "web-2"'s`)
	wantErr(t, "read key", c.OwnInstance(ctx, readerCert, own, "heal"), 403, "read-only")
}

// TestFilterAndAdminOn: what events a caller sees, and who may change a deployment known
// by id; deleting a key takes both away.
func TestFilterAndAdminOn(t *testing.T) {
	c, id := fixture(t)
	ctx := context.Background()
	if !c.Filter(unix)(id) || !c.Filter(unix)(0) {
		t.Error("an admin sees everything")
	}

	if c.Filter(untrusted)(id) || c.Filter(metrics)(id) {
		t.Error("untrusted and metrics callers see nothing")
	}

	if !c.Filter(readerCert)(id) || c.Filter(readerCert)(id+1) || c.Filter(readerCert)(0) {
		t.Error("a deployments certificate sees the deployments it holds keys on only")
	}

	if !c.Filter(governorOf("web-1", "default"))(id) {
		t.Error("a governor sees its deployment from inside it")
	}

	// Shape ext lets outsiders in: a governor outside the deployment sees it too.
	if !c.Filter(governorOf("x", "p2"))(id) {
		t.Error("a governor outside sees a deployment with an external shape")
	}

	elsewhere := governorOf("web-1", "default")
	elsewhere.Audience = auth.TokenAudience("default", "other")
	if c.Filter(elsewhere)(id) {
		t.Error("a governor's token for another deployment sees none of this one")
	}

	wantErr(t, "admin on", c.AdminOn(ctx, unix, id), 0, "")
	wantErr(t, "admin key on", c.AdminOn(ctx, adminCert, id), 0, "")
	wantErr(t, "read key on", c.AdminOn(ctx, readerCert, id), 403, "needs an admin, or an admin key")
	wantErr(t, "admin key on nothing", c.AdminOn(ctx, adminCert, 0), 403, "needs an admin")

	filter := c.Filter(adminCert)
	if !filter(id) {
		t.Fatal("an admin key's deployment is seen")
	}

	err := c.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		key, err := db.GetKey(ctx, tx, id, api.DeploymentKeyRoleAdmin)
		if err != nil {
			return err
		}

		return db.DeleteKey(ctx, tx, key.ID)
	})
	if err != nil {
		t.Fatal(err)
	}

	wantErr(t, "deleted key on", c.AdminOn(ctx, adminCert, id), 403, "needs an admin")
	if !filter(id) {
		t.Error("a filter trusts its read for a second")
	}

	time.Sleep(filterTTL + 100*time.Millisecond)
	if filter(id) {
		t.Error("a deleted key's deployment is still seen after the filter's re-read")
	}
}
