package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestShapePlacement(t *testing.T) {
	tests := []struct {
		name      string
		placement *api.DeploymentShapePlacement
		err       string // substring; empty: valid
	}{
		{"absent", nil, ""},
		{"empty object", &api.DeploymentShapePlacement{}, ""},
		{"members and group", &api.DeploymentShapePlacement{Targets: []string{"m1", "@gpu"}, Spread: "member", Rigor: "permissive"}, ""},
		{"group spread over groups", &api.DeploymentShapePlacement{Targets: []string{"@rack1", "@rack2"}, Spread: "group", Rigor: "strict"}, ""},
		{"group spread over every group", &api.DeploymentShapePlacement{Spread: "group"}, ""},
		{"none", &api.DeploymentShapePlacement{Targets: []string{"@gpu"}, Spread: "none"}, ""},
		{"unknown spread", &api.DeploymentShapePlacement{Spread: "even"}, `placement.spread "even" is not known`},
		{"unknown rigor", &api.DeploymentShapePlacement{Rigor: "hard"}, `placement.rigor "hard" is not known`},
		{"strict without spread", &api.DeploymentShapePlacement{Spread: "none", Rigor: "strict"}, "needs a spread"},
		{"member under group spread", &api.DeploymentShapePlacement{Targets: []string{"m1"}, Spread: "group"}, "name groups in placement.targets (@m1)"},
		{"twice", &api.DeploymentShapePlacement{Targets: []string{"m1", "m1"}}, `lists "m1" twice`},
		{"empty target", &api.DeploymentShapePlacement{Targets: []string{""}}, "empty name"},
		{"bare @", &api.DeploymentShapePlacement{Targets: []string{"@"}}, "empty name"},
		{"slash", &api.DeploymentShapePlacement{Targets: []string{"m/1"}}, "invalid character '/'"},
		{"too many", &api.DeploymentShapePlacement{Targets: strings.Split(strings.Repeat("m,", 65)+"m", ",")}, "at most 64"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ShapePlacement(tt.placement)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("got %v, want an error with %q", err, tt.err)
			}
		})
	}
}
