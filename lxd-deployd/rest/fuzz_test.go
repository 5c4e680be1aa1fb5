package rest

import (
	"encoding/json"
	"net/http"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// FuzzDecodeBody runs request bodies through the decoder and the validators the handlers
// use: a refusal is always a 400, and what is accepted is one valid JSON object.
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"dep1","description":"d","config":{"user.a":"b"}}`,
		`{"name":"a"}{"bogus":1}`,
		`{"name":"a","bogus":1}`,
		`{"name":"a","governor_webhook_url":"http://127.0.0.1:1/h"}`,
		`{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":1,"scaling_maximum":3}`,
		`[]`, `null`, ``, `{"name":"\u0000"}`, `{"scaling_minimum":-1}`,
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			if err == nil {
				return
			}

			code, ok := lxdapi.StatusErrorMatch(err)
			if !ok || code != http.StatusBadRequest {
				t.Fatalf("decode error is not a 400: %v", err)
			}
		}

		var deployment api.DeploymentsPost
		err := UnmarshalBody(body, &deployment)
		check(err)
		if err == nil {
			if !json.Valid(body) {
				t.Fatalf("accepted invalid JSON %q", body)
			}

			_ = validate.Name("deployment", deployment.Name)
			_ = validate.Deployment(deployment.DeploymentPut)
		}

		var shape api.DeploymentShapesPost
		err = UnmarshalBody(body, &shape)
		check(err)
		if err == nil {
			_ = validate.Shape(shape.DeploymentShapePut)
		}
	})
}
