package test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestHostileTemplatesOverTheAPI sends the red team's templates with a dry-run create: each
// is refused with a 400 naming the limit, the daemon stays small and keeps serving. The
// templates run only in the daemon's expansion children, limited to --template-max-memory.
func TestHostileTemplatesOverTheAPI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{ExtraArgs: []string{"--template-max-memory", "256MiB"}})
	c := d.Unix(t)
	star := func(body string) map[string]string {
		return map[string]string{"t.py": "def GenerateConfig(context):\n" + body + "\n    return {'resources': []}\n"}
	}

	cases := []struct {
		name    string
		imports map[string]string
		want    string
	}{
		{"billion-element list", star("    l = [0] * 1000000000"), "memory limit (256 MiB)"},
		{"string doubling", star("    s = 'x' * 1000\n    for i in range(40):\n        s = s + s"), "memory limit (256 MiB)"},
		{"list doubling", star("    l = [0] * 1000\n    for i in range(40):\n        l = l + l"), "memory limit (256 MiB)"},
	}

	before := daemonRSS(t, d)
	for _, tc := range cases {
		req := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "evil"}, DeploymentPut: api.DeploymentPut{Template: "resources:\n- {name: x, type: t.py}\n", TemplateImports: tc.imports}}
		_, _, err := c.Query(http.MethodPost, "/1.0/deployments?dry-run=1", req, "")
		expectCode(t, err, http.StatusBadRequest, tc.name)
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: error does not name the limit: %v", tc.name, err)
		}
	}

	after := daemonRSS(t, d)
	if after > before+64<<20 {
		t.Fatalf("the daemon grew from %d to %d MiB resident", before>>20, after>>20)
	}

	_, _, err := c.GetServer()
	must(t, err)

	// Legitimate templates still expand, through the same children.
	req := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "ok"}, DeploymentPut: api.DeploymentPut{Template: tiersConfig("web:3"), TemplateImports: tiersImports}}
	_, _, err = c.Query(http.MethodPost, "/1.0/deployments?dry-run=1", req, "")
	must(t, err)
}
