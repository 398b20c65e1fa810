package gitops_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// The log tells a rollout as an operator follows it: every cluster's start
// and end with its run and stage, who approved in which commit, objects
// named as kubectl names them (no "/name" for cluster-scoped ones).
func TestTheLogTellsTheRollout(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	clk := clock.NewFake(time.Now())
	logs := &logLines{}
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		onFakeClock(clk)(c)
		logTo(logs)(c)
	})
	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	r.approve(approvalName)
	approval := strings.TrimSpace(r.git("log", "-1", "--format=%h %an <%ae>", "main", "--", "approvals/"+approvalName+".yaml"))
	d.poke()
	d.advanceUntil(t, clk, "the run to succeed", func() bool {
		run := r.run("example-run")
		return run != nil && run.Phase() == fleet.PhaseSucceeded
	})
	d.stop(t)

	run := r.run("example-run")
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			for _, msg := range []string{"cluster update started", "cluster update finished"} {
				n := 0
				for _, rec := range logs.with(msg) {
					if rec["run"] == "example-run" && rec["stage"] == st.StageName && rec["cluster"] == c.ClusterName {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d %q lines for stage %s cluster %s, want 1", n, msg, st.StageName, c.ClusterName)
				}
			}
		}
	}

	taken := logs.with("approval taken from Git")
	if len(taken) != 1 {
		t.Fatalf("%d lines say the approval was taken, want 1", len(taken))
	}
	hash, author, _ := strings.Cut(approval, " ")
	if got := taken[0]; !strings.HasPrefix(hash, fmt.Sprint(got["commit"])[:7]) || got["author"] != author || got["approval_request"] != approvalName {
		t.Errorf("approval line %v, want commit %s and author %s", got, hash, author)
	}

	for _, line := range logs.all() {
		for k, v := range line {
			if s, ok := v.(string); ok && strings.HasPrefix(s, "/") && k != "msg" && k != "err" && k != "cache" {
				t.Errorf("log key %s=%q has a leading slash: %v", k, s, line)
			}
		}
	}
}

// A stuck run fails the same way on every pass; the log says so once, not
// once per pass (the passes go on at debug level).
func TestAStuckRunLogsOncePerChange(t *testing.T) {
	files := quickstartFleet(t)
	files["members.yaml"] = []byte(strings.Replace(string(files["members.yaml"]),
		"name: member2\n  labels:\n    environment: staging\n  annotations:\n",
		"name: member2\n  labels:\n    environment: staging\n  annotations:\n    gitfleet.io/sim-unavailable: \"the image does not pull\"\n", 1))
	if !strings.Contains(string(files["members.yaml"]), "sim-unavailable") {
		t.Fatal("the fleet has no unavailable member")
	}
	r := newFleetRepo(t, files)
	clk := clock.NewFake(time.Now())
	logs := &logLines{}
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		onFakeClock(clk)(c)
		c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.StuckThreshold = time.Minute
	})
	d.advanceUntil(t, clk, "the run to be stuck and failing for five passes", func() bool {
		run := r.run("example-run")
		return run != nil && run.Phase() == fleet.PhaseStuck && len(logs.with("run pass failed again, retrying")) >= 5
	})
	if n := len(logs.with("run pass failed, retrying")); n != 1 {
		t.Errorf("%d info lines for the same failure, want 1", n)
	}
}
