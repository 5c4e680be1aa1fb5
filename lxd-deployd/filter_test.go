package main

import (
	"net/url"
	"slices"
	"testing"
)

// TestDeploymentListFilter checks GET /1.0/deployments?filter= and ?all-projects=true:
// LXD's filter language on names, descriptions and config, each project's URLs, and the
// 400s that say what to write instead.
func TestDeploymentListFilter(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"web1","description":"front end","config":{"user.team":"front"}}`, 201, "")
	a.expect("POST", "/1.0/deployments", `{"name":"web2","config":{"user.team":"back"}}`, 201, "")
	a.expect("POST", "/1.0/deployments", `{"name":"db"}`, 201, "")
	a.expect("POST", "/1.0/deployments?project=p2", `{"name":"web1"}`, 201, "")

	urls := func(query string) []string {
		t.Helper()
		envelope := a.expect("GET", "/1.0/deployments?"+query, "", 200, "")
		var got []string
		for _, u := range envelope["metadata"].([]any) {
			got = append(got, u.(string))
		}

		return got
	}

	names := func(query string) []string {
		t.Helper()
		envelope := a.expect("GET", "/1.0/deployments?recursion=1&"+query, "", 200, "")
		got := []string{}
		for _, d := range envelope["metadata"].([]any) {
			got = append(got, d.(map[string]any)["name"].(string))
		}

		return got
	}

	filter := func(expr string) string { return "filter=" + url.QueryEscape(expr) }
	tests := []struct {
		query string
		want  []string
	}{
		{filter("name eq web1"), []string{"web1"}},
		{filter("name eq WEB1"), []string{"web1"}},
		{filter("name eq web.*"), []string{"web1", "web2"}},
		{filter("name eq ^w"), []string{"web1", "web2"}},
		{filter("name ne db"), []string{"web1", "web2"}},
		{filter("not name eq db"), []string{"web1", "web2"}},
		{filter("name eq web1 or name eq db"), []string{"db", "web1"}},
		{filter("config.user.team eq front"), []string{"web1"}},
		{filter(`description eq "front end"`), []string{"web1"}},
		{filter("name eq nope"), []string{}},
		{"project=p2&" + filter("name eq web.*"), []string{"web1"}},
	}

	for _, tt := range tests {
		got := names(tt.query)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.query, got, tt.want)
		}
	}

	if got := urls(filter("name eq web1")); !slices.Equal(got, []string{"/1.0/deployments/web1"}) {
		t.Errorf("filtered URLs: %v", got)
	}

	if got := urls("all-projects=true&" + filter("name eq web1")); !slices.Equal(got, []string{"/1.0/deployments/web1", "/1.0/deployments/web1?project=p2"}) {
		t.Errorf("all projects' URLs: %v", got)
	}

	if got := urls("all-projects=true"); len(got) != 4 {
		t.Errorf("all projects: %v", got)
	}

	a.expect("GET", "/1.0/deployments?"+filter("name eq"), "", 400, "invalid filter")
	a.expect("GET", "/1.0/deployments?"+filter("name is web1"), "", 400, "use eq or ne")
	a.expect("GET", "/1.0/deployments?"+filter("colour eq red"), "", 400, "name, project, description")
	a.expect("GET", "/1.0/deployments?"+filter("name eq a nand name eq b"), "", 400, "invalid filter")
	a.expect("GET", "/1.0/deployments?all-projects=maybe", "", 400, "all-projects must be true or false")
	a.expect("GET", "/1.0/deployments?all-projects=true&project=p2", "", 400, "drop ?project= or ?all-projects=true")
}
