package printers

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/status"
)

func render(t *testing.T, f func(w io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTablesMatchGoldenFiles(t *testing.T) {
	second := succeededRun()
	second.Name, second.Spec.ResourceSnapshotIndex = "example-run-2", "0"
	second.CreationTimestamp = at(4 * time.Minute)
	second.Status = fleet.UpdateRunStatus{}
	auto := waitingRun()
	auto.Name, auto.Spec.ResourceSnapshotIndex = "example-run-auto", "" // rolls out the latest snapshot
	runs := []*fleet.UpdateRun{succeededRun(), second, auto}
	approvals := []*fleet.ApprovalRequest{approvalRequest("example-run-2", "canary", 4*time.Minute, false), approvalRequest("example-run", "canary", 105*time.Second, true)}
	bindings := []*fleet.Binding{binding("member2", "e1a567da", true), binding("member1", "9a1ee3a0", false), binding("member3", "0c4d11f2", true)}
	clusters := []*fleet.MemberCluster{
		withProperties(memberCluster("member3", map[string]string{"environment": "canary", "order": "1"}, true), "4", "7500m", "28Gi"),
		memberCluster("member1", map[string]string{"environment": "canary", "order": "2"}, true),
		memberCluster("member2", map[string]string{"environment": "staging"}, false),
	}
	evictions := []*fleet.ClusterResourcePlacementEviction{
		eviction("evict-member1", "member1", metav1.ConditionTrue, metav1.ConditionFalse,
			"Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3"),
		eviction("evict-member9", "member9", metav1.ConditionFalse, "",
			"Failed to find scheduler decision for placement in cluster targeted by eviction"),
		eviction("evict-new", "member2", "", "", ""),
	}
	for _, wide := range []bool{false, true} {
		opts := Options{Wide: wide}
		suffix := ".txt"
		if wide {
			suffix = "-wide.txt"
		}
		cases := map[string]func(io.Writer) error{
			"runs":       func(w io.Writer) error { return Runs(w, runs, now, opts) },
			"approvals":  func(w io.Writer) error { return Approvals(w, approvals, now, opts) },
			"snapshots":  func(w io.Writer) error { return Snapshots(w, demoSnapshots(), now, opts) },
			"placements": func(w io.Writer) error { return Placements(w, []*fleet.Placement{demoPlacement()}, now, opts) },
			"bindings":   func(w io.Writer) error { return Bindings(w, bindings, now, opts) },
			"clusters":   func(w io.Writer) error { return Clusters(w, clusters, now, opts) },
			"evictions":  func(w io.Writer) error { return Evictions(w, evictions, now, opts) },
		}
		for name, f := range cases {
			t.Run(name+suffix, func(t *testing.T) { golden.Assert(t, name+suffix, render(t, f)) })
		}
	}
}

func TestTablesAddANamespaceColumnAcrossNamespaces(t *testing.T) {
	cluster := waitingRun()
	team := waitingRun()
	team.Namespace, team.Name = "team-a", "web-app-rollout"
	golden.Assert(t, "runs-all-namespaces.txt", render(t, func(w io.Writer) error {
		return Runs(w, []*fleet.UpdateRun{team, cluster}, now, Options{})
	}))

	// One namespace (kubectl -n): no column.
	got := string(render(t, func(w io.Writer) error { return Runs(w, []*fleet.UpdateRun{team}, now, Options{}) }))
	if strings.Contains(got, "NAMESPACE") {
		t.Errorf("single-namespace listing has a NAMESPACE column:\n%s", got)
	}
}

func TestEmptyListPrintsNothing(t *testing.T) {
	if got := render(t, func(w io.Writer) error { return Runs(w, nil, now, Options{}) }); len(got) != 0 {
		t.Errorf("empty list printed %q", got)
	}
}

func TestAgeIsKubectlsHumanDuration(t *testing.T) {
	cases := []struct {
		age  time.Duration
		want string
	}{
		{4 * time.Second, "4s"},
		{92 * time.Second, "92s"},
		{159 * time.Second, "2m39s"},
		{51 * time.Minute, "51m"},
		{3*time.Hour + 20*time.Minute, "3h20m"},
		{50 * time.Hour, "2d2h"},
		{-time.Second, "0s"}, // clock skew: never negative
	}
	for _, tc := range cases {
		if got := Age(metav1.NewTime(now.Add(-tc.age)), now); got != tc.want {
			t.Errorf("Age(%v) = %q, want %q", tc.age, got, tc.want)
		}
	}
	if got := Age(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("Age(zero) = %q", got)
	}
}

func TestDescribeRunMatchesGoldenFiles(t *testing.T) {
	golden.Assert(t, "describe-run-waiting.txt", render(t, func(w io.Writer) error { return DescribeRun(w, waitingRun(), now) }))
	golden.Assert(t, "describe-run-succeeded.txt", render(t, func(w io.Writer) error { return DescribeRun(w, succeededRun(), now) }))
}

func TestDescribeApprovalShowsLabelsLikeKubectl(t *testing.T) {
	a := approvalRequest("example-run", "canary", 0, true)
	a.Annotations = map[string]string{"note": "short", "long": strings.Repeat("x", 150)}
	golden.Assert(t, "describe-approval.txt", render(t, func(w io.Writer) error { return Describe(w, a) }))
}

func TestSmartLabelSplitsCamelCaseLikeKubectl(t *testing.T) {
	cases := map[string]string{
		"observedGeneration":               "Observed Generation",
		"apiVersion":                       "API Version",
		"uid":                              "UID",
		"policySnapshotIndexUsed":          "Policy Snapshot Index Used",
		"afterStageTaskStatus":             "After Stage Task Status",
		"HTTPServer":                       "HTTP Server",
		"kubernetes-fleet.io/commit":       "kubernetes-fleet.io/commit",
		"clusterResourceOverrideSnapshots": "Cluster Resource Override Snapshots",
	}
	for in, want := range cases {
		if got := smartLabel(in); got != want {
			t.Errorf("smartLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestYAMLStreamIsTheStatusFiles(t *testing.T) {
	objs := []runtime.Object{waitingRun(), approvalRequest("example-run", "canary", 105*time.Second, false)}
	got := render(t, func(w io.Writer) error {
		s := NewYAMLStream(w)
		for _, o := range objs {
			if err := s.Write(o); err != nil {
				return err
			}
		}
		return s.Flush()
	})
	golden.Assert(t, "yaml-stream.yaml", got)
	docs := strings.Split(string(got), "---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%d documents, want %d", len(docs), len(objs))
	}
	for i, d := range docs {
		want, _ := status.Encode(objs[i])
		if d != string(want) {
			t.Errorf("document %d is not the status file:\n%s", i, d)
		}
	}
}

// -o wide tells Waiting, Stopped and Stuck apart, names the stage and what
// the run waits for, and shows the index used when the spec names none.
func TestRunsWideSaysWhatEachRunWaitsFor(t *testing.T) {
	approval := waitingRun()
	approval.Name, approval.Spec.ResourceSnapshotIndex = "waiting-approval", ""

	timed := waitingRun()
	timed.Name = "waiting-timer"
	staging := &timed.Status.StagesStatus[0]
	staging.Conditions = staging.Conditions[:1]
	staging.EndTime = nil
	staging.AfterStageTaskStatus[0].Conditions = []metav1.Condition{cond("WaitTimeElapsed", "False", "AfterStageTaskWaitTimeNotElapsed", "Wait time ends at 2025-07-22T21:29:23Z", 15*time.Second)}
	timed.Status.StagesStatus[1] = fleet.StageUpdatingStatus{StageName: "canary"}
	timed.Status.Conditions[1] = cond("Progressing", "False", "UpdateRunWaiting", "The updateRun is waiting for after-stage tasks in stage staging to complete", 15*time.Second)

	stuck := waitingRun()
	stuck.Name = "stuck"
	canary := &stuck.Status.StagesStatus[1]
	canary.AfterStageTaskStatus = nil
	canary.Clusters[1].Conditions = canary.Clusters[1].Conditions[:1]
	stuck.Status.Conditions[1] = cond("Progressing", "False", "UpdateRunStuck", "The updateRun is stuck waiting for member1 cluster(s) in stage canary to finish updating, please check placement status for potential errors", 5*time.Minute)

	stopped := waitingRun()
	stopped.Name, stopped.Spec.State = "stopped", fleet.StateStop
	stopped.Status.Conditions[1] = cond("Progressing", "False", "UpdateRunStopped", "The update run has been stopped", 2*time.Minute)

	// The deletion stage's approval (a strategy's deleteStage).
	deleting := succeededRun()
	deleting.Name = "waiting-deletion"
	deleting.Status.DeletionStageStatus = &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName,
		Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member4"}},
		BeforeStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "waiting-deletion-before-delete-stage",
			Conditions: []metav1.Condition{cond("ApprovalRequestCreated", "True", "StageTaskApprovalRequestCreated", "ApprovalRequest object is created", 180*time.Second)}}},
		Conditions: []metav1.Condition{cond("Progressing", "False", "StageUpdatingWaiting", "Not all before-stage tasks are completed, waiting for approval", 180*time.Second)}}
	deleting.Status.Conditions = []metav1.Condition{deleting.Status.Conditions[0],
		cond("Progressing", "False", "UpdateRunWaiting", "The updateRun is waiting for before-stage tasks in stage kubernetes-fleet.io/deleteStage to complete", 180*time.Second)}

	// Before canary's clusters start, only its before-stage approval is
	// waited on; the after-stage request, named since initialization,
	// comes later.
	before := waitingRun()
	before.Name = "waiting-before"
	canary = &before.Status.StagesStatus[1]
	canary.Clusters = []fleet.ClusterUpdatingStatus{{ClusterName: "member3"}, {ClusterName: "member1"}}
	canary.BeforeStageTaskStatus = []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "waiting-before-before-canary",
		Conditions: []metav1.Condition{cond("ApprovalRequestCreated", "True", "StageTaskApprovalRequestCreated", "ApprovalRequest object is created", 75*time.Second)}}}
	canary.AfterStageTaskStatus[0].Conditions = nil
	canary.StartTime = nil
	canary.Conditions = []metav1.Condition{cond("Progressing", "False", "StageUpdatingWaiting", "Not all before-stage tasks are completed, waiting for approval", 75*time.Second)}
	before.Status.Conditions[1] = cond("Progressing", "False", "UpdateRunWaiting", "The updateRun is waiting for before-stage tasks in stage canary to complete", 75*time.Second)

	// A progressing run waits for the clusters it updates.
	updating := waitingRun()
	updating.Name = "updating"
	canary = &updating.Status.StagesStatus[1]
	canary.AfterStageTaskStatus[0].Conditions = nil
	canary.Clusters[1].Conditions = canary.Clusters[1].Conditions[:1]
	canary.Conditions = []metav1.Condition{cond("Progressing", "True", "StageUpdatingStarted", "Clusters in the stage started updating", 75*time.Second)}
	updating.Status.Conditions[1] = cond("Progressing", "True", "UpdateRunProgressing", "The update run is making progress", 75*time.Second)

	runs := []*fleet.UpdateRun{approval, timed, stuck, stopped, succeededRun(), deleting, before, updating}
	golden.Assert(t, "runs-wide-phases.txt", render(t, func(w io.Writer) error { return Runs(w, runs, now, Options{Wide: true}) }))
	// The default view stays KubeFleet's: the spec's (empty) index, no phase.
	got := string(render(t, func(w io.Writer) error { return Runs(w, runs, now, Options{}) }))
	if strings.Contains(got, "PHASE") || strings.Contains(got, "Waiting") {
		t.Errorf("default view shows gitfleet's columns:\n%s", got)
	}
}

// describe prints gitfleet's rejected-change note whole; kubectl's cut at
// 140 characters still applies to other annotations.
func TestDescribeDoesNotCutTheRejectedChangeNote(t *testing.T) {
	r := waitingRun()
	note := "run.yaml:7: spec.placementName: Invalid value: \"other\": placementName is immutable; " + strings.Repeat("the accepted spec keeps being used ", 5)
	r.Annotations = map[string]string{fleet.GitfleetPrefix + "rejected-change": note, "other": strings.Repeat("y", 200)}
	got := string(render(t, func(w io.Writer) error { return Describe(w, r) }))
	if !strings.Contains(got, note) {
		t.Errorf("the note is cut:\n%s", got)
	}
	if strings.Contains(got, strings.Repeat("y", 200)) {
		t.Errorf("other long annotations are no longer cut like kubectl's:\n%s", got)
	}
}

// Several kinds in one listing name their kind; watch rows come without
// a header.
func TestTablesShowKindAndOmitHeaders(t *testing.T) {
	r := waitingRun()
	r.APIVersion, r.Kind = fleet.PlacementAPIVersion, fleet.KindClusterStagedUpdateRun
	got := string(render(t, func(w io.Writer) error {
		return Runs(w, []*fleet.UpdateRun{r}, now, Options{ShowKind: true, NoHeaders: true})
	}))
	if !strings.HasPrefix(got, "clusterstagedupdaterun.placement.kubernetes-fleet.io/example-run   ") || strings.Contains(got, "NAME") {
		t.Errorf("got %q", got)
	}
}

// get sources reads like flux get sources git: what was fetched and
// applied, whether it is ready and since when (a failing fetch, a refused
// commit); -o wide keeps the last error after it ended.
func TestSourcesMatchGoldenFiles(t *testing.T) {
	failing := &fleet.GitSource{ObjectMeta: objMeta("main", 0), Spec: fleet.GitSourceSpec{Branch: "main"},
		Status: fleet.GitSourceStatus{LastFetchedCommit: "0c4d11f2e1a567da9a1ee3a00c4d11f2e1a567da", LastAppliedCommit: "9a1ee3a00c4d11f2e1a567da9a1ee3a00c4d11f2",
			LastError: "gitsource: fetch https://git.example.com/fleet.git: repository not found", LastErrorTime: ptr(at(4 * time.Minute)),
			Conditions: []metav1.Condition{cond("Ready", "False", "GitOperationFailed", "gitsource: fetch https://git.example.com/fleet.git: repository not found", 4*time.Minute)}}}
	healed := failing.DeepCopy()
	healed.Name, healed.Spec.Branch = "release.v2", "release/v2"
	healed.Status.Conditions = []metav1.Condition{cond("Ready", "True", "Succeeded", "fetch and sync succeeded", 5*time.Minute)}
	// The tip does not render: fetched, not applied.
	const refusal = "kustomization.yaml: kustomize build failed: accumulating resources: 'missing.yaml' doesn't exist"
	refused := failing.DeepCopy()
	refused.Name, refused.Spec.Branch = "staging", "staging"
	refused.Status.LastError, refused.Status.LastErrorTime = "commit 0c4d11f does not render: "+refusal, ptr(at(3*time.Minute))
	refused.Status.Conditions = []metav1.Condition{cond("Ready", "False", "RenderFailed", "commit 0c4d11f does not render: "+refusal, 3*time.Minute)}
	for _, wide := range []bool{false, true} {
		name := "sources.txt"
		if wide {
			name = "sources-wide.txt"
		}
		golden.Assert(t, name, render(t, func(w io.Writer) error {
			return Sources(w, []*fleet.GitSource{failing, healed, refused}, now, Options{Wide: wide})
		}))
	}
}

// Only prints some rows, aligned as in the whole table (--watch).
func TestOnlyPrintsRowsAlignedWithTheWholeTable(t *testing.T) {
	long := waitingRun()
	long.Name = "a-run-with-a-much-longer-name"
	runs := []*fleet.UpdateRun{waitingRun(), long}
	whole := strings.Split(string(render(t, func(w io.Writer) error { return Runs(w, runs, now, Options{}) })), "\n")
	got := string(render(t, func(w io.Writer) error {
		return Runs(w, runs, now, Options{NoHeaders: true, Only: func(o metav1.Object) bool { return o.GetName() == "example-run" }})
	}))
	if got != whole[2]+"\n" {
		t.Errorf("got %q, want the whole table's row %q", got, whole[2])
	}
}

// eviction is an eviction of example-placement with Valid and Executed as
// given ("" for absent); msg is the deciding condition's.
func eviction(name, cluster string, valid, executed metav1.ConditionStatus, msg string) *fleet.ClusterResourcePlacementEviction {
	e := &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.PlacementEvictionSpec{PlacementName: "example-placement", ClusterName: cluster}}
	if valid != "" {
		e.SetConditions(metav1.Condition{Type: string(fleet.PlacementEvictionConditionTypeValid), Status: valid, Message: msg})
	}
	if executed != "" {
		e.SetConditions(metav1.Condition{Type: string(fleet.PlacementEvictionConditionTypeExecuted), Status: executed, Message: msg})
	}
	return e
}

// kubectl's label flags: --show-labels adds LABELS last, -L a column per
// key headed by the key's last segment in capitals, empty where unset.
func TestTablesShowLabelsAndLabelColumnsAsKubectl(t *testing.T) {
	clusters := []*fleet.MemberCluster{
		memberCluster("member1", map[string]string{"environment": "canary", "fleet.example.com/order": "2"}, true),
		memberCluster("member2", nil, false),
	}
	got := string(render(t, func(w io.Writer) error {
		return Clusters(w, clusters, now, Options{ShowLabels: true, LabelColumns: []string{"environment", "fleet.example.com/order"}})
	}))
	want := `NAME      JOINED   AGE   ENVIRONMENT   ORDER   LABELS
member1   True     65m   canary        2       environment=canary,fleet.example.com/order=2
member2            65m                         <none>
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// --no-headers sizes the columns by the rows alone, as kubectl's does; the
// rows --watch prints keep the widths of the whole table, header included.
func TestNoHeadersSizesColumnsByTheRows(t *testing.T) {
	clusters := []*fleet.MemberCluster{memberCluster("m1", nil, true)}
	got := string(render(t, func(w io.Writer) error { return Clusters(w, clusters, now, Options{NoHeaders: true}) }))
	if want := "m1    True   65m\n"; got != want {
		t.Errorf("--no-headers: got %q, want %q", got, want)
	}
	got = string(render(t, func(w io.Writer) error {
		return Clusters(w, clusters, now, Options{NoHeaders: true, Only: func(metav1.Object) bool { return true }})
	}))
	if want := "m1     True     65m\n"; got != want {
		t.Errorf("--watch rows: got %q, want %q", got, want)
	}
}

// A cell is one line: kubectl's printer cuts it at a line break with "...".
func TestTablesCutMultiLineCellsAsKubectl(t *testing.T) {
	s := &fleet.GitSource{ObjectMeta: objMeta("main", 0), Spec: fleet.GitSourceSpec{Branch: "main"},
		Status: fleet.GitSourceStatus{Conditions: []metav1.Condition{cond("Ready", "False", "RenderFailed", "commit 0c4d11f does not render:\nkustomization.yaml: missing", 0)}}}
	got := string(render(t, func(w io.Writer) error { return Sources(w, []*fleet.GitSource{s}, now, Options{NoHeaders: true}) }))
	if !strings.HasSuffix(got, "commit 0c4d11f does not render:...\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("got %q", got)
	}
}
