package main

import (
	"slices"
	"testing"
)

func TestDeploymentListFilters(t *testing.T) {
	tests := []struct {
		args    []string
		remote  string
		filters []string
	}{
		{nil, "", []string{}},
		{[]string{"prod:"}, "prod:", []string{}},
		{[]string{"prod:web"}, "prod:", []string{"name=^web"}},
		{[]string{"web"}, "", []string{"name=^web"}},
		{[]string{"web-[0-9]+$"}, "", []string{"name=web-[0-9]+$"}},
		{[]string{"user.team=front", "web"}, "", []string{"config.user.team=front", "name=^web"}},
		{[]string{"config.user.team=front"}, "", []string{"config.user.team=front"}},
		{[]string{"local:", "description=My app"}, "local:", []string{"description=My app"}},
		{[]string{"governor_webhook_url=https://x:1/y"}, "", []string{"governor_webhook_url=https://x:1/y"}},
	}

	for _, tt := range tests {
		remote, filters := deploymentListFilters(tt.args)
		if remote != tt.remote || !slices.Equal(filters, tt.filters) {
			t.Errorf("%q: got %q %q, want %q %q", tt.args, remote, filters, tt.remote, tt.filters)
		}
	}
}
