package web

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tileExpr finds the tile of cluster name.
func tileExpr(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("a.tile")].find(e => e.querySelector(".tname").textContent === %s)`, js(name))
}

// waitTile waits until the tile of cluster name shows state, and says
// how long that took after since.
func waitTile(t *testing.T, ctx context.Context, name, state string) {
	t.Helper()
	waitFor(t, ctx, name+" "+state, fmt.Sprintf(`(() => { const e = %s; return e && e.querySelector(".tstate").textContent === %s && e.classList.contains(%s) })()`,
		tileExpr(name), js(state), js("s-"+state)))
}

func TestRunPageFollowsARolloutOnTheFakeClock(t *testing.T) {
	r := newRollout(t)
	_, base := serve(t, r.repo, true)
	r.start()
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/runs/rollout"))
	waitFor(t, ctx, "the event stream", `document.body.dataset.connected === "true"`)

	order := eval[[]string](t, ctx, `[...document.querySelectorAll("ol.stages > li")].map(e => e.classList.contains("gate") ? "gate " + e.getAttribute("aria-label") : e.querySelector(".stage-name").textContent)`)
	if want := []string{"stage canary", "gate after stage canary", "stage prod", "gate after stage prod", "deletion stage"}; !slices.Equal(order, want) {
		t.Fatalf("columns %q, want %q", order, want)
	}
	waitTile(t, ctx, "canary-1", "updating")
	for _, c := range []string{"prod-1", "prod-2", "prod-3"} {
		waitTile(t, ctx, c, "pending")
	}

	// The canary becomes available: its tile turns, the gate asks.
	changed := time.Now()
	r.stepUntil("canary-1 succeeded", func(v runview.View) bool { return clusterState(v, "canary-1") == runview.ClusterSucceeded })
	waitTile(t, ctx, "canary-1", "succeeded")
	t.Logf("the page showed the canary succeeded %s after the clock moved (engine, commit and page)", time.Since(changed).Round(time.Millisecond))
	request := r.run().Status.StagesStatus[0].AfterStageTaskStatus[0].ApprovalRequestName
	waitFor(t, ctx, "the gate to ask for "+request, fmt.Sprintf(`(() => { const g = document.querySelector("li.gate .task");
		return g && g.querySelector(".task-state").textContent === "waiting for approval" &&
			g.querySelector(".request code").textContent === %s &&
			g.querySelector(".command code").textContent === %s })()`, js(request), js("gitfleet approve "+request+" --commit && git push")))
	if got := eval[string](t, ctx, `document.getElementById("waiting").textContent`); got != "approval "+request {
		t.Errorf("waiting for %q, want approval %s", got, request)
	}
	waitTile(t, ctx, "prod-1", "pending")

	// Alice merges the approval: the gate says who.
	r.approve(request, "Alice")
	waitFor(t, ctx, "the gate to say who approved", `(() => { const g = document.querySelector("li.gate .task .approved-by"); return g && g.textContent.startsWith("approved by Alice (commit ") })()`)

	// Prod goes one cluster at a time.
	waitTile(t, ctx, "prod-1", "updating")
	waitTile(t, ctx, "prod-2", "pending")
	r.stepUntil("prod-1 succeeded", func(v runview.View) bool { return clusterState(v, "prod-1") == runview.ClusterSucceeded })
	waitTile(t, ctx, "prod-1", "succeeded")
	waitTile(t, ctx, "prod-2", "updating")
	waitTile(t, ctx, "prod-3", "pending")
	waitFor(t, ctx, "the soak's planned wait", `(() => { const g = document.querySelector('li.gate[aria-label="after stage prod"] .task');
		return g && g.querySelector(".task-state").textContent === "not started" && g.querySelector(".when").textContent === "waits 1m0s" })()`)

	// Once prod is done the soak says when it ends, then that it ended.
	r.stepUntil("the soak", func(v runview.View) bool { return v.Waiting.For == runview.WaitTimedWait })
	until := runview.Of(r.run()).Waiting.TimedWaitString()
	waitFor(t, ctx, "the soak's end", fmt.Sprintf(`(() => { const g = document.querySelector('li.gate[aria-label="after stage prod"] .task');
		return g && g.querySelector(".task-state").textContent === "waiting" && g.querySelector(".when").textContent === %s })()`, js(until)))
	for r.run().Phase() != fleet.PhaseSucceeded && r.step() {
	}
	waitFor(t, ctx, "the soak to have ended", `document.querySelector('li.gate[aria-label="after stage prod"] .task-state').textContent === "elapsed"`)
	waitFor(t, ctx, "the run to succeed", `document.getElementById("phase").textContent === "Succeeded"`)
	for _, c := range []string{"canary-1", "prod-1", "prod-2", "prod-3"} {
		waitTile(t, ctx, c, "succeeded")
	}

	// The timeline lists the run's status commits, newest first, linked
	// to the forge.
	head := strings.TrimSpace(r.git("log", "-1", "--format=%H", "--", "status/runs/rollout.yaml"))
	waitFor(t, ctx, "the timeline to start at "+head, fmt.Sprintf(`(() => { const a = [...document.querySelectorAll(".timeline a")].map(a => a.href);
		return a.length >= 4 && a[0] === %s })()`, js("https://forge.example/fleet/commit/"+head)))
}

// hostileRun is a run whose first cluster is named like a script, whose
// second failed and whose third waits.
func hostileRun() *fleet.UpdateRun {
	at := metav1.NewTime(epoch)
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at}
	}
	return &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "hostile", Generation: 1, CreationTimestamp: at},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun},
		Status: fleet.UpdateRunStatus{ResourceSnapshotIndexUsed: "0",
			Conditions: []metav1.Condition{cond("Initialized", "True", "UpdateRunInitializedSuccessfully", ""),
				cond("Progressing", "True", "UpdateRunProgressing", "")},
			StagesStatus: []fleet.StageUpdatingStatus{{StageName: "one", Clusters: []fleet.ClusterUpdatingStatus{
				{ClusterName: "<script>window.pwned=1</script>", Conditions: []metav1.Condition{
					cond("Started", "True", "ClusterUpdatingStarted", ""), cond("Succeeded", "True", "ClusterUpdatingSucceeded", "")}},
				{ClusterName: "bad", Conditions: []metav1.Condition{
					cond("Started", "True", "ClusterUpdatingStarted", ""),
					cond("Succeeded", "False", "ClusterUpdatingFailed", "cluster updating failed: quota exceeded in namespace app")}},
				{ClusterName: "next"},
			}, Conditions: []metav1.Condition{cond("Progressing", "True", "StageUpdatingStarted", "")}}}}}
}

func TestRunPageShowsNamesAsTextFailuresOnHoverAndFocusAndMovesByKeys(t *testing.T) {
	r := newRepo(t)
	_, base := serve(t, r, false)
	r.write("status: hostile", hostileRun())
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/runs/hostile"))
	waitFor(t, ctx, "the tiles", `document.querySelectorAll("a.tile").length === 3`)

	if got := eval[string](t, ctx, `document.querySelector("a.tile .tname").textContent`); got != "<script>window.pwned=1</script>" {
		t.Errorf("first tile reads %q, want the cluster's name as text", got)
	}
	if eval[bool](t, ctx, `window.pwned !== undefined || document.querySelectorAll("script").length !== 1`) {
		t.Error("a cluster name ran as a script")
	}

	// The failed cluster's message shows on focus, and on hover.
	tip := fmt.Sprintf(`(() => { const e = %s; const t = e.querySelector(".tip");
		return e.querySelector(".tstate").textContent === "failed" && getComputedStyle(t).display === "block" &&
			t.textContent.includes("cluster updating failed: quota exceeded in namespace app") })()`, tileExpr("bad"))
	do(t, ctx, chromedp.Focus(chromedp.CSS(`a.tile[href="/clusters/bad"]`)))
	waitFor(t, ctx, "the failure on focus", tip)
	if eval[bool](t, ctx, fmt.Sprintf(`getComputedStyle(%s.querySelector(".tip")).display === "block"`, tileExpr("next"))) {
		t.Error("an unfocused tile shows its conditions")
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	rect := eval[[]float64](t, ctx, fmt.Sprintf(`(() => { const r = %s.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2] })()`, tileExpr("bad")))
	do(t, ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, rect[0], rect[1]))
	waitFor(t, ctx, "the failure on hover", tip)

	// Arrow keys walk the tiles in rollout order.
	do(t, ctx, chromedp.Focus(chromedp.CSS("a.tile")))
	for _, step := range []struct{ key, want string }{
		{kb.ArrowRight, "bad"}, {kb.ArrowRight, "next"}, {kb.ArrowRight, "next"}, {kb.ArrowLeft, "bad"},
		{kb.Home, "<script>window.pwned=1</script>"}, {kb.End, "next"},
	} {
		do(t, ctx, chromedp.KeyEvent(step.key))
		waitFor(t, ctx, "focus on "+step.want, fmt.Sprintf(`document.activeElement === %s`, tileExpr(step.want)))
	}
}
