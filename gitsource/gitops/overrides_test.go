package gitops_test

import (
	"os"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// Overrides through `gitfleet serve` on three real API servers: every
// member's namespace is labelled with its environment and the canary
// members get their own config value (examples/overrides). The override is
// changed while the run holds before the canary stage: the run still
// delivers the value it froze at initialization, and the next run delivers
// the new one.
func TestOverridesReachRealClustersAndEachRunKeepsWhatItFroze(t *testing.T) {
	clusters := startClusters(t, "member1", "member2", "member3")
	member1, member2, member3 := clusters[0], clusters[1], clusters[2]
	overrides, err := os.ReadFile("../../examples/overrides/overrides.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := kubeconfigFleet(t)
	files["overrides.yaml"] = overrides
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "200ms",
		"--status-interval", "100ms", "--metrics-addr", "", "--kubeconfig", kubetest.Kubeconfig(t, clusters, nil))

	value := func(c *kubetest.Cluster) string { return c.ConfigMapValue("test-namespace", "test-cm", "key") }
	env := func(c *kubetest.Cluster) string {
		ns := c.Get("v1", "Namespace", "", "test-namespace")
		if ns == nil {
			return ""
		}
		return ns.GetLabels()["env"]
	}

	eventually(t, "the canary stage's before-stage approval request", func() bool {
		return r.approval("example-run-before-canary") != nil
	})
	if value(member2) != "value1" || env(member2) != "staging" || value(member1) != "" || value(member3) != "" {
		t.Fatalf("before canary starts: member2 has %q (env %q), member1 %q, member3 %q; want only member2, with value1 and env staging",
			value(member2), env(member2), value(member1), value(member3))
	}

	r.commit("canary gets a new value", map[string][]byte{
		"overrides.yaml": []byte(strings.Replace(string(overrides), "canary-value-on-", "changed-value-on-", 1)),
	})
	eventually(t, "the override's second snapshot", func() bool {
		return r.file("status/overridesnapshots/test-namespace/config-per-env/1.yaml") != nil
	})
	r.approve("example-run-before-canary")
	eventually(t, "the canary stage's after-stage approval request", func() bool {
		return r.approval("example-run-after-canary") != nil
	})
	for _, c := range []struct {
		cluster *kubetest.Cluster
		name    string
	}{{member1, "member1"}, {member3, "member3"}} {
		if got, want := value(c.cluster), "canary-value-on-"+c.name; got != want || env(c.cluster) != "canary" {
			t.Errorf("%s has %q (env %q), want the frozen %q (env canary)", c.name, got, env(c.cluster), want)
		}
	}
	run := r.run("example-run")
	for _, s := range run.Status.StagesStatus {
		for _, c := range s.Clusters {
			if s.StageName == "canary" && (len(c.ResourceOverrideSnapshots) != 1 || c.ResourceOverrideSnapshots[0].Name != "config-per-env-0") {
				t.Errorf("run records %v for %s, want config-per-env-0", c.ResourceOverrideSnapshots, c.ClusterName)
			}
		}
	}
	r.approve("example-run-after-canary")
	r.waitPhase("example-run", fleet.PhaseSucceeded)

	r.commit("the next run", map[string][]byte{"next-run.yaml": []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: next-run
spec:
  placementName: example-placement
  stagedRolloutStrategyName: example-strategy
  state: Run
`)})
	r.approve("next-run-before-canary")
	eventually(t, "the changed value on the canary members", func() bool {
		return value(member1) == "changed-value-on-member1" && value(member3) == "changed-value-on-member3"
	})
	if value(member2) != "value1" || env(member2) != "staging" {
		t.Errorf("member2 has %q (env %q), want value1 (env staging)", value(member2), env(member2))
	}
}
