package web

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// get fetches a page: its status, headers and body.
func get(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(body)
}

// scriptTag is a script element; every one must load a file of the server.
var scriptTag = regexp.MustCompile(`<script[^>]*>`)

// external is an element that would load something from elsewhere.
var external = regexp.MustCompile(`(src|srcset|<link[^>]*href)="(https?:)?//`)

func TestPagesAreReadOnlyEscapedAndCarryACSPWithoutInlineScript(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	r.write("status: hostile", hostileRun())
	for _, path := range []string{"/", "/runs/hostile"} {
		code, h, body := get(t, http.MethodGet, base+path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		policy := h.Get("Content-Security-Policy")
		if !strings.Contains(policy, "script-src 'self'") || strings.Contains(policy, "unsafe-inline") || strings.Contains(policy, "unsafe-eval") {
			t.Errorf("GET %s: Content-Security-Policy %q, want script-src 'self' and nothing unsafe", path, policy)
		}
		for _, tag := range scriptTag.FindAllString(body, -1) {
			if tag != `<script src="/assets/app.js" defer>` {
				t.Errorf("GET %s: script element %s, want only the embedded app.js", path, tag)
			}
		}
		if external.MatchString(body) {
			t.Errorf("GET %s loads from outside the server (no CDN, no fonts): %s", path, external.FindString(body))
		}
	}
	if _, _, body := get(t, http.MethodGet, base+"/runs/hostile"); !strings.Contains(body, "&lt;script&gt;window.pwned=1&lt;/script&gt;") {
		t.Errorf("the cluster named <script> is not escaped:\n%s", body)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if code, _, _ := get(t, method, base+"/runs/hostile"); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405 (read-only)", method, code)
		}
	}
	if code, _, _ := get(t, http.MethodGet, base+"/events"); code != http.StatusNotFound {
		t.Errorf("GET /events of a view that is not live: %d, want 404", code)
	}
}

func TestFleetPageFiltersRunsAndCountsClustersOnTheLatestSnapshot(t *testing.T) {
	r := newRollout(t)
	_, base := serve(t, r.repo, false)
	r.start()
	failed := hostileRun()
	failed.Status.Conditions[1] = metav1.Condition{Type: "Succeeded", Status: "False", Reason: "UpdateRunFailed",
		Message: "cluster bad failed", ObservedGeneration: 1, LastTransitionTime: failed.CreationTimestamp}
	r.write("status: hostile failed", failed)

	_, _, body := get(t, http.MethodGet, base+"/")
	for _, want := range []string{`data-run="rollout"`, `data-run="hostile"`, `<option>Failed</option>`, `<option>Progressing</option>`} {
		if !strings.Contains(body, want) {
			t.Errorf("fleet page lacks %s:\n%s", want, body)
		}
	}
	_, _, body = get(t, http.MethodGet, base+"/?phase=Failed")
	if !strings.Contains(body, `data-run="hostile"`) || strings.Contains(body, `data-run="rollout"`) {
		t.Errorf("filtered by phase Failed, the page lists:\n%s", body)
	}
	_, _, body = get(t, http.MethodGet, base+"/?placement=none")
	if strings.Contains(body, `class="run"`) {
		t.Errorf("filtered by a placement no run has, the page lists runs:\n%s", body)
	}
	// The canary has snapshot 0 once it succeeded: 1 of 4 clusters.
	r.stepUntil("canary-1 succeeded", func(v runview.View) bool { return clusterState(v, "canary-1") == runview.ClusterSucceeded })
	_, _, body = get(t, http.MethodGet, base+"/")
	if !strings.Contains(body, `<a href="/snapshots/app/0">0</a>`) || !strings.Contains(body, `<span class="count">1/4</span>`) {
		t.Errorf("placement app: want latest snapshot 0 on 1/4 clusters:\n%s", body)
	}
}

func TestSnapshotPageListsWhatChangedFromThePreviousIndex(t *testing.T) {
	r := newRollout(t)
	_, base := serve(t, r.repo, false)
	ctx := context.Background()
	p, err := r.hub.GetPlacement(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	next := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app", "namespace": "default"}, "data": map[string]any{"k": "v2"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token", "namespace": "default"}}},
	}
	if _, _, err := resourcesnapshot.Ensure(ctx, r.hub, p, next, "abc1234"); err != nil {
		t.Fatal(err)
	}
	r.settle()
	_, _, body := get(t, http.MethodGet, base+"/snapshots/app/1")
	for _, want := range []string{
		`<tr class="c-changed"><td>changed</td><td>ConfigMap</td><td>default</td><td>app</td></tr>`,
		`<tr class="c-added"><td>added</td><td>Secret</td><td>default</td><td>token</td></tr>`,
		`<a href="/snapshots/app/0">snapshot 0</a>`, `<code>abc1234</code>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("snapshot 1 lacks %s:\n%s", want, body)
		}
	}
	if _, _, body := get(t, http.MethodGet, base+"/snapshots/app/0"); !strings.Contains(body, `<td>added</td><td>ConfigMap</td>`) {
		t.Errorf("snapshot 0 does not add the config map:\n%s", body)
	}
	if code, _, _ := get(t, http.MethodGet, base+"/snapshots/app/7"); code != http.StatusNotFound {
		t.Errorf("a snapshot that does not exist: %d, want 404", code)
	}
}

func TestClusterPageShowsItsSnapshotOverridesAndDeliveryErrors(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-east-x1", Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, ResourceSnapshotName: "app-0-snapshot", TargetCluster: "east",
			ClusterResourceOverrideSnapshots: []string{"east-replicas-0"}},
		Status: fleet.ResourceBindingStatus{FailedPlacements: []fleet.FailedResourcePlacement{{
			ResourceIdentifier: fleet.ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "app"},
			Condition:          metav1.Condition{Type: "Applied", Status: "False", Reason: "ApplyFailed", Message: "configmaps \"app\" is forbidden"}}}}}
	r.write("status: binding", b)
	_, _, body := get(t, http.MethodGet, base+"/clusters/east")
	for _, want := range []string{"Overrides applied: east-replicas-0", "ConfigMap default/app: configmaps &#34;app&#34; is forbidden", "app-0-snapshot"} {
		if !strings.Contains(body, want) {
			t.Errorf("cluster east lacks %s:\n%s", want, body)
		}
	}
	if code, _, _ := get(t, http.MethodGet, base+"/clusters/west"); code != http.StatusNotFound {
		t.Errorf("a cluster nothing knows: %d, want 404", code)
	}
}

func TestRunPageShowsStuckClustersNamespacedRunsAndLargeStagesAPageAtATime(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	stuck := hostileRun()
	stuck.Namespace = "team-a"
	stuck.Status.Conditions[1] = metav1.Condition{Type: "Progressing", Status: "False", Reason: fleet.UpdateRunStuckReason,
		Message: "clusters next have been updating longer than 5m0s", ObservedGeneration: 1, LastTransitionTime: stuck.CreationTimestamp}
	stuck.Status.StagesStatus[0].Clusters[2].Conditions = []metav1.Condition{{Type: "Started", Status: "True", Reason: "ClusterUpdatingStarted",
		ObservedGeneration: 1, LastTransitionTime: stuck.CreationTimestamp}}
	r.write("status: stuck and big", stuck, bigRun(10000))

	_, _, body := get(t, http.MethodGet, base+"/runs/team-a/hostile")
	for _, want := range []string{`<span class="tname">next</span> <span class="tstate">stuck</span>`,
		`<p class="message" role="status">clusters next have been updating longer than 5m0s</p>`, "Run team-a/hostile"} {
		if !strings.Contains(body, want) {
			t.Errorf("the stuck run's page lacks %s:\n%s", want, body)
		}
	}
	if code, _, _ := get(t, http.MethodGet, base+"/runs/hostile"); code != http.StatusNotFound {
		t.Errorf("a namespaced run by its name alone: %d, want 404", code)
	}

	_, _, body = get(t, http.MethodGet, base+"/runs/big")
	if n := strings.Count(body, `class="tile `); n > 3*TileLimit {
		t.Errorf("the 10,000-cluster page has %d tiles, want the stages grouped", n)
	}
	for _, want := range []string{`<span class="tname">4,950 clusters</span> <span class="tstate">pending</span>`,
		`href="/runs/big?stage=wave2&amp;state=pending"`, `<span class="tname">member00099</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the 10,000-cluster page lacks %s", want)
		}
	}
	_, _, body = get(t, http.MethodGet, base+"/runs/big?stage=wave2&state=pending&page=2")
	for _, want := range []string{"Stage wave2: 4,950 pending (page 2 of 10)", `<span class="tname">member05550</span>`,
		`href="/runs/big?page=1&amp;stage=wave2&amp;state=pending">previous page</a>`, `href="/runs/big?page=3&amp;stage=wave2&amp;state=pending">next page</a>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page 2 of wave2's pending clusters lacks %s", want)
		}
	}
	if n := strings.Count(body, `class="tile `); n != pageSize {
		t.Errorf("page 2 shows %d tiles, want %d", n, pageSize)
	}
}

// The gate names who approved from what serve recorded on the request
// (gitfleet.io/approved-by), not from the file's history: with
// --status-branch, or after gitfleet rewrote the file, every commit of it
// is gitfleet's.
func TestTheGateNamesWhoApprovedFromTheRequest(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	run := hostileRun()
	approved := metav1.Condition{Type: fleet.ApprovalRequestConditionApproved, Status: metav1.ConditionTrue, ObservedGeneration: 1,
		Reason: fleet.ClusterApprovalRequestApprovedReason, LastTransitionTime: run.CreationTimestamp}
	run.Status.StagesStatus[0].AfterStageTaskStatus = []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "hostile-after-one",
		Conditions: []metav1.Condition{
			{Type: fleet.StageTaskConditionApprovalRequestCreated, Status: metav1.ConditionTrue, Reason: "ApprovalRequestCreated", LastTransitionTime: run.CreationTimestamp},
			{Type: fleet.StageTaskConditionApprovalRequestApproved, Status: metav1.ConditionTrue, Reason: "ApprovalRequestApproved", LastTransitionTime: run.CreationTimestamp}}}}
	for _, tc := range []struct{ name, approvedBy, want string }{
		{"a person's merge", "Alice <alice@example.com> (merge commit 0123456789ab)", "approved by Alice (merge commit 0123456789ab) at 2026-"},
		{"nobody named in Git", "", "approved by " + fleet.ClusterApprovalRequestApprovedReason + " at 2026-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar := &fleet.ApprovalRequest{ObjectMeta: metav1.ObjectMeta{Name: "hostile-after-one", Generation: 1, CreationTimestamp: run.CreationTimestamp,
				Labels: map[string]string{fleet.TargetUpdateRunLabel: "hostile", fleet.TaskTypeLabel: fleet.AfterStageTaskLabelValue}},
				Spec:   fleet.ApprovalRequestSpec{TargetUpdateRun: "hostile", TargetStage: "one"},
				Status: fleet.ApprovalRequestStatus{Conditions: []metav1.Condition{approved}}}
			if tc.approvedBy != "" {
				ar.Annotations = map[string]string{fleet.ApprovedByAnnotation: tc.approvedBy}
			}
			r.write("status: "+tc.name, run, ar)
			_, _, body := get(t, http.MethodGet, base+"/runs/hostile")
			if !strings.Contains(body, `<p class="approved-by">`+tc.want) {
				t.Errorf("the gate does not say %q:\n%s", tc.want, body)
			}
			if strings.Contains(body, "alice@example.com") {
				t.Error("the page shows the approver's e-mail address")
			}
		})
	}
}

// A cluster that left the placement under a run that froze its cluster set
// is a skipped tile, in its own colour, with why on hover; in a large stage
// the skipped ones are a group of their own, not lost from the counts.
func TestRunPageShowsSkippedClusters(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	skipped := metav1.Condition{Type: fleet.ClusterUpdatingConditionSkipped, Status: metav1.ConditionTrue, Reason: fleet.ClusterLeftPlacementReason,
		Message: "cluster next left the placement; the run goes on without it", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(epoch)}
	small := hostileRun()
	small.Status.StagesStatus[0].Clusters[2].Conditions = []metav1.Condition{skipped}
	big := bigRun(10000)
	for j := range 30 { // wave2's last clusters left
		c := &big.Status.StagesStatus[2].Clusters[len(big.Status.StagesStatus[2].Clusters)-1-j]
		c.Conditions = []metav1.Condition{skipped}
	}
	r.write("status: skipped clusters", small, big)

	_, _, body := get(t, http.MethodGet, base+"/runs/hostile")
	for _, want := range []string{`class="tile s-skipped"`, `<span class="tname">next</span> <span class="tstate">skipped</span>`,
		"the run goes on without it"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %s:\n%s", want, body)
		}
	}
	_, _, body = get(t, http.MethodGet, base+"/runs/big")
	if want := `<a class="tile group s-skipped" href="/runs/big?stage=wave2&amp;state=skipped"><span class="tname">30 clusters</span> <span class="tstate">skipped</span>`; !strings.Contains(body, want) {
		t.Errorf("the 10,000-cluster page lacks the skipped group %s", want)
	}
	_, _, body = get(t, http.MethodGet, base+"/runs/big?stage=wave2&state=skipped")
	if n := strings.Count(body, `class="tile s-skipped"`); n != 30 {
		t.Errorf("wave2's skipped clusters: %d tiles, want 30", n)
	}
}
