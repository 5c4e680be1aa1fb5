package main

import (
	"strings"
	"testing"
)

// TestShapeTrafficRefusedChangesNothing: a shape's traffic that cannot be served is a 400
// naming the field, on create, PUT and PATCH alike, and changes nothing: no shape is made,
// an existing shape keeps its traffic and revision. A second shape listening where another
// listens is a 409.
func TestShapeTrafficRefusedChangesNothing(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	good := `"traffic":{"port":80,"protocol":"http","listen":"127.0.0.1:8080","drain_timeout":"30s"}`
	withTraffic := func(body string, traffic string) string {
		return strings.Replace(body, `"scaling_minimum":1`, traffic+`,"scaling_minimum":1`, 1)
	}

	a.expect("POST", "/1.0/deployments/dep1/shapes", withTraffic(shapeBody, good), 201, "")
	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	revision := shape["revision"]

	bad := map[string]string{
		"traffic.port":          `"traffic":{"port":0,"listen":"127.0.0.1:8081"}`,
		"traffic.protocol":      `"traffic":{"port":80,"protocol":"udp","listen":"127.0.0.1:8081"}`,
		"traffic.listen":        `"traffic":{"port":80,"listen":"127.0.0.1"}`,
		"exclude each other":    `"traffic":{"port":80,"listen":"127.0.0.1:8081","backend":"web"}`,
		"needs a listen":        `"traffic":{"port":80}`,
		"drain_timeout":         `"traffic":{"port":80,"listen":"127.0.0.1:8081","drain_timeout":"2h"}`,
		"traffic.drain_timeout": `"traffic":{"port":80,"listen":"127.0.0.1:8081","drain_timeout":"soon"}`,
	}

	for want, traffic := range bad {
		other := strings.Replace(shapeBody, `"web"`, `"other"`, 1)
		a.expect("POST", "/1.0/deployments/dep1/shapes", withTraffic(other, traffic), 400, want)
		a.expect("GET", "/1.0/deployments/dep1/shapes/other", "", 404, "")

		// A PATCH merges into the shape's traffic, which keeps its listen address.
		if want != "needs a listen" {
			a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", "{"+traffic+"}", 400, "")
		}

		put := withTraffic(`{"instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":1,"scaling_maximum":3}`, traffic)
		a.expect("PUT", "/1.0/deployments/dep1/shapes/web", put, 400, "")
		after := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
		if after["revision"] != revision || after["traffic"].(map[string]any)["listen"] != "127.0.0.1:8080" {
			t.Fatalf("a refused traffic (%s) changed the shape: %v", want, after)
		}
	}

	taken := strings.Replace(shapeBody, `"web"`, `"api"`, 1)
	a.expect("POST", "/1.0/deployments/dep1/shapes", withTraffic(taken, good), 409, "")
	a.expect("GET", "/1.0/deployments/dep1/shapes/api", "", 404, "")
}
