package apply

import (
	"context"
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRequestsWithoutTemplate: a request without a template applies none, unless it asks
// for what only a template gives (imports, a dry run: 400); PATCH never applies one. None
// of these expands anything.
func TestRequestsWithoutTemplate(t *testing.T) {
	var e *Engine
	ctx := context.Background()
	by := api.DeploymentRequestor{}
	post := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}
	c, plan, err := e.ForCreate(ctx, by, "default", post, false)
	if c != nil || plan != nil || err != nil {
		t.Fatalf("a plain create: %v %v %v", c, plan, err)
	}

	_, _, err = e.ForCreate(ctx, by, "default", post, true)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "send the config in template") {
		t.Fatalf("a dry run without a template: %v", err)
	}

	post.TemplateImports = map[string]string{"lib": "x"}
	_, _, err = e.ForCreate(ctx, by, "default", post, false)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("imports without a template: %v", err)
	}

	ref := refs.DeploymentRef{Project: "default", Name: "dep1"}
	c, plan, err = e.ForUpdate(ctx, by, ref, api.DeploymentPut{}, true, false, false, nil)
	if c != nil || plan != nil || err != nil {
		t.Fatalf("a plain PATCH: %v %v %v", c, plan, err)
	}

	_, _, err = e.ForUpdate(ctx, by, ref, api.DeploymentPut{Template: "shapes: {}"}, true, false, false, nil)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "PATCH does not apply templates") {
		t.Fatalf("a PATCH with a template: %v", err)
	}

	_, _, err = e.ForUpdate(ctx, by, ref, api.DeploymentPut{}, false, true, false, nil)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a dry-run PUT without a template: %v", err)
	}
}
