package rollout

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestParseCredential(t *testing.T) {
	secret := strings.Repeat("ab", 32)
	id, got, ok := ParseCredential(CredentialPrefix + "42-" + secret)
	if !ok || id != 42 || got != secret {
		t.Fatalf("parse: %d %q %v", id, got, ok)
	}

	for _, bad := range []string{"", "eyJhbGciOi.x.y", CredentialPrefix + "42", CredentialPrefix + "x-" + secret, CredentialPrefix + "-1-" + secret, CredentialPrefix + "42-" + secret[1:], CredentialPrefix + "0-" + secret} {
		if _, _, ok := ParseCredential(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestUsesDeployerAndNames(t *testing.T) {
	custom := db.Rollout{DeploymentRollout: api.DeploymentRollout{Strategy: api.DeploymentShapeRollout{Strategy: api.RolloutCustom}, Cause: CauseAPI}}
	if !UsesDeployer(custom) {
		t.Fatal("a custom rollout uses its deployer")
	}

	custom.Cause = CauseAutoRevert
	if UsesDeployer(custom) {
		t.Fatal("the revert of a custom rollout is a built-in rolling one")
	}

	name := transientName(strings.Repeat("w", 70), 12, db.KindDeployer)
	if len(name) != 63 || !strings.Contains(name, "-d12-") {
		t.Fatalf("name %q", name)
	}

	if name = transientName("web", 3, db.KindPre); !strings.HasPrefix(name, "web-pre3-") || len(name) != len("web-pre3-")+6 {
		t.Fatalf("hook name %q", name)
	}

	custom.Cause = CauseAPI
	if UsesHooks(custom) {
		t.Fatal("a custom rollout runs no hooks")
	}

	custom.Strategy.Strategy = api.RolloutCanary
	if !UsesHooks(custom) {
		t.Fatal("a canary rollout runs its hooks")
	}

	if lastLine("a\nb: failed\n\n") != ": b: failed" || lastLine("") != "" {
		t.Fatalf("lastLine %q", lastLine("a\nb: failed\n\n"))
	}
}
