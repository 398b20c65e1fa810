package fleettest_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
)

func TestScaleShapesThatCannotBeWrittenAreRefused(t *testing.T) {
	for _, s := range []fleettest.Scale{
		{Members: 0, Runs: 1, ClustersPerRun: 1, Stages: 1},
		{Members: 150, Runs: 1, ClustersPerRun: 100, Stages: 3},
		{Members: 2, Runs: 1, ClustersPerRun: 2, Stages: 3},
	} {
		if s.Check() == nil {
			t.Errorf("%+v: Check accepts it", s)
		}
	}
}

// TestScaleFleetPicksClustersPerRunMembersPerPlacement: every placement's
// required affinity matches exactly ClustersPerRun members, spread over
// every stage, and there is one run per placement.
func TestScaleFleetPicksClustersPerRunMembersPerPlacement(t *testing.T) {
	s := fleettest.Scale{Members: 1000, Runs: 100, ClustersPerRun: 100, Stages: 3, MaxConcurrency: "50%", Driver: "simulated"}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	files := s.Fleet("v0")
	files["runs.yaml"] = s.RunsFile("r0")
	byKind := map[string][]map[string]any{}
	for name, data := range files {
		for _, doc := range strings.Split(string(data), "\n---\n") {
			if strings.TrimSpace(strings.Trim(doc, "-\n")) == "" {
				continue
			}
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			kind, _ := obj["kind"].(string)
			byKind[kind] = append(byKind[kind], obj)
		}
	}
	for kind, want := range map[string]int{"MemberCluster": 1000, "ClusterResourcePlacement": 100, "Namespace": 100,
		"ConfigMap": 100, "ClusterStagedUpdateStrategy": 1, "ClusterStagedUpdateRun": 100} {
		if got := len(byKind[kind]); got != want {
			t.Errorf("%d %s objects; want %d", got, kind, want)
		}
	}
	members := map[string]map[string]int{} // group -> stage -> members
	for _, m := range byKind["MemberCluster"] {
		labels := m["metadata"].(map[string]any)["labels"].(map[string]any)
		g, st := labels["group"].(string), labels["stage"].(string)
		if members[g] == nil {
			members[g] = map[string]int{}
		}
		members[g][st]++
	}
	for _, p := range byKind["ClusterResourcePlacement"] {
		policy := p["spec"].(map[string]any)["policy"].(map[string]any)
		terms := policy["affinity"].(map[string]any)["clusterAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["clusterSelectorTerms"].([]any)
		group := terms[0].(map[string]any)["labelSelector"].(map[string]any)["matchLabels"].(map[string]any)["group"].(string)
		total := 0
		for _, n := range members[group] {
			total += n
		}
		if total != s.ClustersPerRun || len(members[group]) != s.Stages {
			t.Errorf("placement %v picks group %s: %d members in %d stages; want %d in %d", p["metadata"], group, total, len(members[group]), s.ClustersPerRun, s.Stages)
		}
	}
}
