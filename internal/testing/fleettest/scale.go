package fleettest

import (
	"flag"
	"fmt"
	"strings"
)

// Scale is the shape of KubeFleet's published scale test as a fleet
// repository: Members member clusters and Runs placements, each placement
// picking ClustersPerRun members and rolled out by a staged update run of
// its own with one strategy of Stages stages at MaxConcurrency. KubeFleet
// ran 1,000 members and 100 concurrent runs of 100 clusters in 3 stages at
// 50%.
//
// The members come in groups of ClustersPerRun (label group: g<k>); placement
// app<i> picks group i mod the number of groups, so every placement picks
// exactly ClustersPerRun members and the groups share the runs evenly. A
// member's stage is its label stage: s<j mod Stages>.
type Scale struct {
	Members, Runs, ClustersPerRun, Stages int
	MaxConcurrency                        string
	// Driver is every member's gitfleet.io/driver annotation: simulated
	// (delivered in process) or work (pulled by an agent).
	Driver string
}

// StrategyName is the name of the strategy every run of a Scale fleet uses.
const StrategyName = "scale"

// ScaleFlags registers the flags that set a scale benchmark's shape,
// -<prefix>-members (default members), -<prefix>-runs, -<prefix>-clusters,
// -<prefix>-stages and -<prefix>-max-concurrency (KubeFleet's 100, 100,
// 3, 50%), and returns the shape they set once flags are parsed.
func ScaleFlags(prefix, benchmark string, members int) *Scale {
	s := &Scale{}
	flag.IntVar(&s.Members, prefix+"-members", members, "member clusters of "+benchmark+" (KubeFleet's scale test: 1,000)")
	flag.IntVar(&s.Runs, prefix+"-runs", 100, "concurrent runs of "+benchmark+", one placement each")
	flag.IntVar(&s.ClustersPerRun, prefix+"-clusters", 100, "clusters each run of "+benchmark+" rolls out to")
	flag.IntVar(&s.Stages, prefix+"-stages", 3, "stages of the strategy of "+benchmark)
	flag.StringVar(&s.MaxConcurrency, prefix+"-max-concurrency", "50%", "maxConcurrency of every stage of "+benchmark)
	return s
}

// Check says why s is not a shape Fleet can write, nil when it is.
func (s Scale) Check() error {
	switch {
	case s.Members <= 0 || s.Runs <= 0 || s.ClustersPerRun <= 0 || s.Stages <= 0:
		return fmt.Errorf("members %d, runs %d, clusters per run %d, stages %d: want them all positive", s.Members, s.Runs, s.ClustersPerRun, s.Stages)
	case s.Members%s.ClustersPerRun != 0:
		return fmt.Errorf("members %d: want a multiple of the clusters per run (%d), so that every placement picks as many", s.Members, s.ClustersPerRun)
	case s.ClustersPerRun < s.Stages:
		return fmt.Errorf("clusters per run %d: want at least one per stage (%d)", s.ClustersPerRun, s.Stages)
	}
	return nil
}

// MemberName is the name of member j.
func (Scale) MemberName(j int) string { return fmt.Sprintf("member%04d", j) }

// PlacementName is the name of placement i, which selects namespace app<i>.
func (Scale) PlacementName(i int) string { return fmt.Sprintf("app%d", i) }

// RunName is the name of the run of placement i in the round named round.
func (Scale) RunName(round string, i int) string { return fmt.Sprintf("%s-app%d", round, i) }

// Fleet is the repository before any run: members (PerFile a file),
// placements, the workload of each (a namespace and a config map whose
// data is version) and the strategy.
func (s Scale) Fleet(version string) map[string][]byte {
	files := map[string][]byte{}
	var b strings.Builder
	for j := range s.Members {
		fmt.Fprintf(&b, `apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: %[1]s
  labels: {group: g%[2]d, stage: s%[3]d}
  annotations: {gitfleet.io/driver: %[4]s}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent-%[1]s, namespace: fleet-system, apiGroup: ""}
---
`, s.MemberName(j), j/s.ClustersPerRun, j%s.Stages, s.Driver)
		if (j+1)%PerFile == 0 || j == s.Members-1 {
			files[fmt.Sprintf("members/m%04d.yaml", j/PerFile)] = []byte(b.String())
			b.Reset()
		}
	}
	for i := range s.Runs {
		fmt.Fprintf(&b, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: %[1]s}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: %[1]s}]
  policy:
    placementType: PickN
    numberOfClusters: %[2]d
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms: [{labelSelector: {matchLabels: {group: g%[3]d}}}]
  strategy: {type: External}
---
`, s.PlacementName(i), s.ClustersPerRun, i%(s.Members/s.ClustersPerRun))
	}
	files["placements.yaml"] = []byte(b.String())
	b.Reset()
	files["workload.yaml"] = s.Workload(version)
	fmt.Fprintf(&b, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: %s}
spec:
  stages:
`, StrategyName)
	for k := range s.Stages {
		fmt.Fprintf(&b, "  - {name: s%d, maxConcurrency: %q, labelSelector: {matchLabels: {stage: s%d}}}\n", k, s.MaxConcurrency, k)
	}
	files["strategy.yaml"] = []byte(b.String())
	return files
}

// Workload is workload.yaml of Fleet: per placement a namespace and a
// config map whose data is version; a new version is a new resource
// snapshot of every placement.
func (s Scale) Workload(version string) []byte {
	var b strings.Builder
	for i := range s.Runs {
		fmt.Fprintf(&b, `apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: config, namespace: %[1]s}
data: {version: %[2]q}
---
`, s.PlacementName(i), version)
	}
	return []byte(b.String())
}

// RunsFile is runs.yaml with one run a placement, named after round, each
// rolling out the placement's latest snapshot.
func (s Scale) RunsFile(round string) []byte {
	var b strings.Builder
	for i := range s.Runs {
		fmt.Fprintf(&b, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: %s}
spec: {placementName: %s, stagedRolloutStrategyName: %s, state: Run}
---
`, s.RunName(round, i), s.PlacementName(i), StrategyName)
	}
	return []byte(b.String())
}
