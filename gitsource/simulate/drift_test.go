package simulate

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A simulated member that drifts (gitfleet.io/sim-drift) under
// whenToApply: IfNotDrifted shows drift detection in simulate: the
// placement's status names the drifted field with both values, and the run
// waits on that member as on one whose apply failed.
func TestSimulateShowsADriftingMember(t *testing.T) {
	files := quickstart(t)
	members := strings.Replace(string(files["members.yaml"]), `    gitfleet.io/sim-available-after: 10s
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member3`, `    gitfleet.io/sim-available-after: 10s
    gitfleet.io/sim-drift: ConfigMap/test-namespace/test-cm:/data/key=edited-by-hand
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member3`, 1)
	if members == string(files["members.yaml"]) {
		t.Fatal("examples/quickstart/members.yaml changed: member3 not found")
	}
	files["members.yaml"] = []byte(members)
	files["placement.yaml"] = []byte(strings.Replace(string(files["placement.yaml"]), "    type: External\n",
		"    type: External\n    applyStrategy:\n      whenToApply: IfNotDrifted\n", 1))
	res, err := Run(context.Background(), Options{Repo: newRepo(t, files)})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"driftedPlacements:",
		"      - path: /data/key\n        valueInHub: value1\n        valueInMember: edited-by-hand",
		"reason: FoundDrifts",
		"message: Work object example-placement-work has failed to apply",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("simulate -o yaml lacks %q", want)
		}
	}
}
