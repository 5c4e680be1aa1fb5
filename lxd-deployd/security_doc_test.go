package main

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// accessLabels name each access check as doc/security.md does.
var accessLabels = map[string]string{
	"allowAdmin":           "admin",
	"allowTrusted":         "trusted",
	"allowMetrics":         "metrics",
	"allowDeploymentRead":  "deployment key (read)",
	"allowDeploymentAdmin": "deployment key (admin)",
	"allowActiveGovernor":  "deployment key (admin); the active governor only, if one holds the deployment",
	"allowInstanceHook":    "deployment key (admin); in-instance: own instance only",
	"allowInstanceHealth":  "deployment key (admin); in-instance: own instance only",
	"allowMember":          "member",
	"allowSecretRead":      "admin; no read-only web session",
	"allowCredentialWrite": "admin; no web session",
}

// accessLabel names an action's access check.
func accessLabel(a rest.Action) (string, error) {
	if a.Public {
		return "public", nil
	}

	name := runtime.FuncForPC(reflect.ValueOf(a.Access).Pointer()).Name()
	name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
	label, ok := accessLabels[name]
	if !ok {
		return "", fmt.Errorf("access check %s has no label: add it to accessLabels and doc/security.md", name)
	}

	return label, nil
}

// routeTable renders the route table as doc/security.md lists it.
func routeTable(t *testing.T) []string {
	t.Helper()
	all := append(endpoints(apis{}), clusterEndpoints(clusterAPI{})...)
	var rows []string
	for _, e := range all {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			a := e.Actions()[method]
			if a.Handler == nil {
				continue
			}

			label, err := accessLabel(a)
			if err != nil {
				t.Fatal(err)
			}

			inInstance := "no"
			if a.Governor {
				inInstance = "yes"
			}

			// A | inside a table cell is escaped in Markdown.
			path := strings.ReplaceAll(e.Path, "|", `\|`)
			rows = append(rows, fmt.Sprintf("| %s | `%s` | %s | %s |", method, path, label, inInstance))
		}
	}

	return rows
}

// TestSecurityDocMatchesRouteTable: doc/security.md lists every route with who may call
// it, exactly as the route table says, so the page cannot drift from the code.
func TestSecurityDocMatchesRouteTable(t *testing.T) {
	data, err := os.ReadFile("../doc/security.md")
	if err != nil {
		t.Fatal(err)
	}

	documented := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if strings.HasPrefix(line, "| "+method+" | `") {
				documented[strings.TrimSpace(line)] = true
			}
		}
	}

	var missing []string
	for _, row := range routeTable(t) {
		if !documented[row] {
			missing = append(missing, row)
		}

		delete(documented, row)
	}

	var stale []string
	for row := range documented {
		stale = append(stale, row)
	}

	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		t.Fatalf("doc/security.md's route table differs from the code.\nmissing (add these rows):\n%s\nstale (remove these rows):\n%s", strings.Join(missing, "\n"), strings.Join(stale, "\n"))
	}
}
