package gitops_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/status/metrics"
)

// source is status/sources/<name>.yaml on the remote, or nil.
func (r *fleetRepo) source(name string) *fleet.GitSource {
	o := r.object("status/sources/" + name + ".yaml")
	if o == nil {
		return nil
	}
	return o.(*fleet.GitSource)
}

// status/sources/main.yaml says which commit of a person serve fetched and
// which it applied, and since when it fails; polls that bring only
// gitfleet's own commits change nothing, so they commit nothing.
func TestSourceStatusRecordsCommitsAndFailuresOnlyWhenTheyChange(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	first := r.git("rev-parse", "HEAD")
	counter := &fetchCounter{}
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) { c.Observer = counter })
	waitForCanaryApproval(t, r)

	src := r.source("main")
	if src == nil || src.Spec.Branch != "main" || src.Status.LastFetchedCommit != first || src.Status.LastAppliedCommit != first ||
		!meta.IsStatusConditionTrue(src.Status.Conditions, fleet.GitSourceConditionReady) || src.Status.LastError != "" {
		t.Fatalf("source after the first sync: %+v", src)
	}

	// Polls that bring only gitfleet's own status commits: no commit.
	d.settle(t, r)
	eventually(t, "the status pushed", d.quiet)
	before := d.remoteRefs()
	for range 3 {
		n := counter.fetches.Load()
		d.poke()
		eventually(t, "a poll", func() bool { return counter.fetches.Load() > n && d.quiet() })
	}
	if after := d.remoteRefs(); after != before {
		t.Errorf("polls without news committed:\nbefore %s\nafter  %s", before, after)
	}

	// A person's commit is fetched and applied.
	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	c2 := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	d.poke()
	eventually(t, "the source to show "+c2[:7], func() bool {
		s := r.source("main")
		return s != nil && s.Status.LastFetchedCommit == c2 && s.Status.LastAppliedCommit == c2
	})

	// The remote goes away and comes back: the failure is recorded with
	// when it began, and kept as the last error once it ended.
	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		t.Fatal(err)
	}
	d.poke()
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })
	if err := os.Rename(away, r.remote); err != nil {
		t.Fatal(err)
	}
	d.poke()
	eventually(t, "the failure recorded and ended", func() bool {
		s := r.source("main")
		return s != nil && s.Status.LastError != "" && s.Status.LastErrorTime != nil &&
			meta.IsStatusConditionTrue(s.Status.Conditions, fleet.GitSourceConditionReady)
	})
	// A source record that shares its commit with other changes (a poll's
	// pass may write snapshots too) is a line of the body, not the subject.
	log := gitCmd(t, r.remote, "--git-dir", r.remote, "log", "--format=%x00%B", "main", "--", "status/sources")
	t.Logf("commits of status/sources:\n%s", log)
	for _, msg := range strings.Split(strings.TrimPrefix(log, "\x00"), "\x00") {
		if !strings.Contains(msg, "source main") && !strings.Contains(msg, "run") {
			t.Errorf("a commit recording the source does not say so: %q", msg)
		}
	}
}

// While the newest commit that changed hub content does not render, the
// source is not Ready: `get sources` names the refused commit and its error,
// FETCHED is ahead of APPLIED, and gitfleet_source_ready is 0. A commit that
// touches only approvals/ keeps it so (the hub content is still the refused
// one); another refused commit names itself and keeps since when the source
// fails; a restart with an empty cache reads the source and commit records
// back, renders nothing again and writes nothing; the fix makes it Ready.
func TestTheSourceIsNotReadyWhileTheTipDoesNotRender(t *testing.T) {
	files := timedFleet(t, "0s", "1s")
	files["kustomization.yaml"] = []byte(quickstartKustomization)
	r := newFleetRepo(t, files)
	url := "file://" + r.remote
	commits := map[string]string{"the quickstart": r.git("rev-parse", "HEAD")}

	// Each daemon has a registry and a clock of its own, the clock
	// starting where the last one stopped (timers die with a daemon).
	clk := clock.NewFake(time.Now())
	var reg *prometheus.Registry
	start := func() *daemon {
		clk = clock.NewFake(clk.Now())
		reg = prometheus.NewRegistry()
		m := metrics.New(reg, clk)
		return startDaemonWith(t, url, t.TempDir(), 0, func(c *gitops.Config) { onFakeClock(clk)(c); measuredBy(m)(c) })
	}
	d := start()
	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	if got := gatheredValue(t, reg, metrics.SourceReady, "main"); got != "1" {
		t.Errorf("%s{name=main} = %s before any refused commit, want 1", metrics.SourceReady, got)
	}

	fix := map[string][]byte{"kustomization.yaml": []byte(quickstartKustomization),
		"workload.yaml": []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1))}
	steps := []struct {
		name    string
		files   map[string][]byte // nil: approve the canary request
		restart bool              // with an empty cache, before the step
		// The source after the step: commits by step name, and words of
		// Ready's message.
		ready                     metav1.ConditionStatus
		reason                    string
		fetched, applied, refused string
		message                   []string
	}{
		{name: "a kustomization that does not build", files: map[string][]byte{"kustomization.yaml": kustomized("  - missing.yaml\n")},
			ready: metav1.ConditionFalse, reason: fleet.RenderFailedReason,
			fetched: "a kustomization that does not build", applied: "the quickstart", refused: "a kustomization that does not build",
			message: []string{"does not render", "missing.yaml"}},
		{name: "an approval on top of it",
			ready: metav1.ConditionFalse, reason: fleet.RenderFailedReason,
			fetched: "an approval on top of it", applied: "the quickstart", refused: "a kustomization that does not build",
			message: []string{"missing.yaml"}},
		{name: "another commit that does not render", files: map[string][]byte{"kustomization.yaml": []byte("resources: [members.yaml\n")},
			ready: metav1.ConditionFalse, reason: fleet.RenderFailedReason,
			fetched: "another commit that does not render", applied: "the quickstart", refused: "another commit that does not render",
			message: []string{"kustomization.yaml"}},
		// kustomize may read any file below --path, so a README change
		// is hub content there: refused like its parent, for its reason.
		{name: "a README-only commit on top", files: map[string][]byte{"README.md": []byte("# the fleet\n")},
			ready: metav1.ConditionFalse, reason: fleet.RenderFailedReason,
			fetched: "a README-only commit on top", applied: "the quickstart", refused: "a README-only commit on top",
			message: []string{"kustomization.yaml"}},
		{name: "the fix", files: fix, restart: true,
			ready: metav1.ConditionTrue, reason: fleet.GitSourceSucceededReason,
			fetched: "the fix", applied: "the fix", message: []string{"fetch and sync succeeded"}},
	}
	var failingSince *metav1.Time
	for _, step := range steps {
		if step.restart {
			before := r.file("status/sources/main.yaml")
			refs := d.remoteRefs()
			d.stop(t)
			clk.Advance(time.Hour) // a rewritten time would show
			d = start()
			d.settleOn(t, clk)
			if got := r.file("status/sources/main.yaml"); !bytes.Equal(got, before) {
				t.Errorf("after a restart with an empty cache the source changed:\n%s\nwas:\n%s", got, before)
			}
			if after := d.remoteRefs(); after != refs {
				t.Errorf("a restart on a refused tip committed:\nbefore %s\nafter  %s", refs, after)
			}
			if got := gatheredSum(t, reg, metrics.RenderFailuresTotal); got != 0 {
				t.Errorf("after the restart %s = %v: a recorded commit was rendered again", metrics.RenderFailuresTotal, got)
			}
			if got := gatheredValue(t, reg, metrics.SourceReady, "main"); got != "0" {
				t.Errorf("after the restart %s{name=main} = %s, want 0", metrics.SourceReady, got)
			}
		}
		clk.Advance(time.Minute) // each step a minute after the last
		pushed := clk.Now()
		if step.files == nil {
			r.approve(approvalName)
			commits[step.name] = r.git("rev-parse", "HEAD")
		} else {
			commits[step.name] = r.commit(step.name, step.files)
		}
		d.poke()
		var src *fleet.GitSource
		var ready *metav1.Condition
		d.advanceUntil(t, clk, "the source after "+step.name, func() bool {
			src = r.source("main")
			if src == nil {
				return false
			}
			// A render longer than the loop's patience goes on beside it:
			// the source shows the fetch first and the render's outcome
			// with a later sync, so wait for both.
			c := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
			settled := c != nil && c.Status == step.ready && src.Status.LastAppliedCommit == commits[step.applied]
			if settled && step.refused != "" {
				settled = strings.HasPrefix(c.Message, "commit "+commits[step.refused][:7]+" ")
			}
			return src.Status.LastFetchedCommit == commits[step.fetched] && settled
		})
		// Ready is written with FETCHED, in the same file.
		ready = meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
		if ready == nil || ready.Status != step.ready {
			t.Fatalf("%s: Ready %+v, want %s", step.name, ready, step.ready)
		}
		if src.Status.LastAppliedCommit != commits[step.applied] {
			t.Errorf("%s: APPLIED %s, want %s (%s)", step.name, src.Status.LastAppliedCommit, commits[step.applied], step.applied)
		}
		msg := ready.Message
		if step.refused != "" {
			msg = strings.TrimPrefix(msg, "commit "+commits[step.refused][:7]+" does not render: ")
			if msg == ready.Message {
				t.Errorf("%s: Ready's message %q does not name the refused commit %.7s (%s)", step.name, ready.Message, commits[step.refused], step.refused)
			}
			rec, _ := r.object("status/commits/" + commits[step.refused] + ".yaml").(*fleet.Commit)
			if rec == nil {
				t.Fatalf("%s: no record of %s", step.name, step.refused)
			}
			if c := meta.FindStatusCondition(rec.Status.Conditions, fleet.CommitConditionRendered); c == nil || c.Message != msg {
				t.Errorf("%s: Ready's message %q, want the commit's error %+v", step.name, ready.Message, c)
			}
		}
		if ready.Reason != step.reason {
			t.Errorf("%s: Ready's reason %s, want %s", step.name, ready.Reason, step.reason)
		}
		for _, w := range step.message {
			if !strings.Contains(ready.Message, w) {
				t.Errorf("%s: Ready's message %q lacks %q", step.name, ready.Message, w)
			}
		}
		if err := d.LastError(); err != nil {
			t.Errorf("%s: the loop reports %v; a refused commit is the repository's failure, not serve's (/readyz)", step.name, err)
		}
		if step.ready == metav1.ConditionFalse {
			if failingSince == nil {
				failingSince = &ready.LastTransitionTime
			}
			if !ready.LastTransitionTime.Equal(failingSince) {
				t.Errorf("%s: Ready False since %s, want since the first refused commit, %s", step.name, ready.LastTransitionTime, failingSince)
			}
			if step.refused == step.name && (src.Status.LastError != ready.Message || src.Status.LastErrorTime == nil ||
				src.Status.LastErrorTime.Time.Before(pushed.Truncate(time.Second))) {
				t.Errorf("%s: last error %q at %v, want Ready's message from %s on", step.name, src.Status.LastError, src.Status.LastErrorTime, pushed)
			}
		} else if src.Status.LastError == "" {
			t.Errorf("%s: the last error was not kept after the failure ended", step.name)
		}
		want := "0"
		if step.ready == metav1.ConditionTrue {
			want = "1"
		}
		if got := gatheredValue(t, reg, metrics.SourceReady, "main"); got != want {
			t.Errorf("%s: %s{name=main} = %s, want %s", step.name, metrics.SourceReady, got, want)
		}
		if step.files == nil {
			// The rollout goes on: the approval is taken and the run
			// finishes (and the restart later has nothing left to do).
			d.advanceUntil(t, clk, "the run approved on a refused tip to succeed", func() bool {
				run := r.run("example-run")
				return run != nil && run.Phase() == fleet.PhaseSucceeded
			})
		}
	}
	// The records of the refused commits outlived the restart and the fix.
	for _, name := range []string{"a kustomization that does not build", "another commit that does not render"} {
		if r.file("status/commits/"+commits[name]+".yaml") == nil {
			t.Errorf("the record of %q is gone", name)
		}
	}
}

// gatheredSum is the sum of the counter name's series in reg.
func gatheredSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// gatheredValue is the value of the series of name whose name label is
// label (any series when label is ""), "" when reg has none.
func gatheredValue(t *testing.T, reg *prometheus.Registry, name, label string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if label == "" || l.GetName() == metrics.LabelName && l.GetValue() == label {
					switch {
					case m.Gauge != nil:
						return fmt.Sprint(m.GetGauge().GetValue())
					case m.Counter != nil:
						return fmt.Sprint(m.GetCounter().GetValue())
					}
				}
			}
		}
	}
	return ""
}
