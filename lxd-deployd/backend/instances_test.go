package backend

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func TestInstanceRequest(t *testing.T) {
	template := lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}}
	template.Config = map[string]string{"limits.cpu": "1"}
	req := InstanceRequest(template, "web1", "dep1", "web")
	if req.Name != "web1" || req.Config[ConfigDeployment] != "dep1" || req.Config[ConfigShape] != "web" || req.Config[configProtection] != "true" || req.Config["limits.cpu"] != "1" {
		t.Fatalf("request: %+v", req)
	}

	if len(template.Config) != 1 || template.Name != "" {
		t.Fatal("the shape's template must not be changed")
	}
}

func TestTemplateHash(t *testing.T) {
	a := lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}}
	b := a
	b.Source.Alias = "alpine"
	if TemplateHash(a) == TemplateHash(b) || TemplateHash(a) != TemplateHash(a) || len(TemplateHash(a)) != 12 {
		t.Fatalf("hashes %s %s", TemplateHash(a), TemplateHash(b))
	}
}
