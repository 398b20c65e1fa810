package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/plan"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// recordedFleet is the quickstart after two real rollouts by `gitfleet
// serve`: example-run rolled snapshot 0 out, a commit changed the config
// map (snapshot 1) and example-run-2 rolled that out, each approved with
// `gitfleet approve --commit`. status/ on main records it all. It returns
// the remote and a clone of it on main.
func recordedFleet(t *testing.T) (remote, work string) {
	t.Helper()
	for _, kv := range gitEnv { // approve commits with the person's git
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	remote = quickstartRemote(t, "1s", "2s")
	work = filepath.Join(t.TempDir(), "work")
	gitCmd(t, filepath.Dir(work), "clone", "-q", remote, work)
	rollout := func(approval string) {
		t.Helper()
		serveUntilIdle(t, remote)
		gitCmd(t, work, "pull", "-q", "--ff-only")
		if _, errOut, code := gitfleet(t, "approve", approval, "--repo", work, "--commit"); code != 0 {
			t.Fatalf("approve %s: exit %d: %s", approval, code, errOut)
		}
		gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
		serveUntilIdle(t, remote)
		gitCmd(t, work, "pull", "-q", "--ff-only")
	}
	rollout("example-run-after-canary")
	edit(t, work, "workload.yaml", "key: value1", "key: value2")
	writeFile(t, work, "run-2.yaml", strings.Replace(readFile(t, work, "run.yaml"), "name: example-run\n", "name: example-run-2\n", 1))
	commitAll(t, work, "value2, rolled out by example-run-2")
	gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
	rollout("example-run-2-after-canary")
	for _, name := range []string{"example-run", "example-run-2"} {
		run := decodeFrom(t, remote, "main", "status/runs/"+name+".yaml").(*fleet.UpdateRun)
		if run.Phase() != fleet.PhaseSucceeded {
			t.Fatalf("fixture: %s is %s after serve, want Succeeded", name, run.Phase())
		}
	}
	return remote, work
}

func serveUntilIdle(t *testing.T, remote string) {
	t.Helper()
	if out, errOut, code := gitfleet(t, serveArgs(remote, t, "--until-idle", "--timeout", "20m")...); code != 0 {
		t.Fatalf("serve: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	s := readFile(t, dir, name)
	if !strings.Contains(s, old) {
		t.Fatalf("%s has no %q", name, old)
	}
	writeFile(t, dir, name, strings.Replace(s, old, new, 1))
}

func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "-m", msg)
}

// branch starts a branch of work at main.
func branch(t *testing.T, work, name string) {
	t.Helper()
	gitCmd(t, work, "checkout", "-q", "-B", name, "main")
}

// hashes replaces the commits of a plan, which serve's status commits make
// different on every run, by their roles; pad pads them to the hash's
// width, so a table stays aligned as printed.
func hashes(s string, p *plan.Plan, pad bool) string {
	for _, h := range []struct{ hash, role string }{{p.Head, "<head>"}, {p.Base, "<base>"}, {p.Status, "<status>"}} {
		if h.hash == "" {
			continue
		}
		long, short := h.role, h.role
		if pad {
			long, short = fmt.Sprintf("%-40s", h.role), fmt.Sprintf("%-12s", h.role)
		}
		s = strings.ReplaceAll(s, h.hash, long)
		s = strings.ReplaceAll(s, h.hash[:12], short)
	}
	return s
}

const rollbackRun = `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: back-to-0}
spec: {placementName: example-placement, resourceSnapshotIndex: "0", stagedRolloutStrategyName: example-strategy, state: Run}
`

func TestPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve through two rollouts")
	}
	remote, work := recordedFleet(t)
	planOf := func(t *testing.T, args ...string) (*plan.Plan, string, int) {
		t.Helper()
		out, errOut, code := gitfleet(t, append([]string{"plan", "--repo", work, "--base", "origin/main", "-o", "json"}, args...)...)
		var p plan.Plan
		if err := yaml.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan -o json: %v\nstdout: %s\nstderr: %s", err, out, errOut)
		}
		return &p, errOut, code
	}

	// A change of the workload with a run that rolls it out: snapshot 2,
	// replacing 1 that every cluster has, through both stages.
	t.Run("golden", func(t *testing.T) {
		branch(t, work, "value3")
		edit(t, work, "workload.yaml", "key: value2", "key: value3")
		writeFile(t, work, "run-3.yaml", strings.Replace(readFile(t, work, "run.yaml"), "name: example-run\n", "name: example-run-3\n", 1))
		commitAll(t, work, "value3, rolled out by example-run-3")
		p, errOut, code := planOf(t)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, f := range []struct{ golden, format string }{{"plan.txt", ""}, {"plan.yaml", "yaml"}} {
			out, errOut, code := gitfleet(t, "plan", "--repo", work, "--base", "origin/main", "-o", f.format)
			if code != 0 {
				t.Fatalf("-o %q: exit %d: %s", f.format, code, errOut)
			}
			golden.Assert(t, f.golden, []byte(hashes(out, p, f.format == "")))
		}
		golden.Assert(t, "plan-comment.md", []byte(hashes(plan.Comment(p), p, false)))
	})

	// A change that drops the config map: the deletion comes first, on
	// the clusters that have it, in the rollout order of the run that
	// deletes it. Without a run, plan says which snapshot deletes it.
	t.Run("deletion", func(t *testing.T) {
		branch(t, work, "drop-cm")
		namespaceOnly, _, _ := strings.Cut(readFile(t, work, "workload.yaml"), "---")
		writeFile(t, work, "workload.yaml", namespaceOnly)
		commitAll(t, work, "drop the config map")
		p, errOut, code := planOf(t)
		want := []plan.Deletion{{Placement: "example-placement", Resource: "ConfigMap test-namespace/test-cm", Snapshot: "2", Clusters: []string{"member1", "member2", "member3"}}}
		if code != 0 || !reflect.DeepEqual(p.Deletions, want) {
			t.Fatalf("without a run: exit %d, deletions %+v, want %+v\n%s", code, p.Deletions, want, errOut)
		}
		if got := p.Deletions[0].String(); got != "Deletes: ConfigMap test-namespace/test-cm from 3 clusters (member1, member2, member3) when a run of placement example-placement rolls out resource snapshot 2 (no run in this change does)" {
			t.Errorf("without a run: %q", got)
		}

		writeFile(t, work, "run-3.yaml", strings.Replace(readFile(t, work, "run.yaml"), "name: example-run\n", "name: example-run-3\n", 1))
		commitAll(t, work, "example-run-3 rolls it out")
		p, errOut, code = planOf(t)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		out, errOut, code := gitfleet(t, "plan", "--repo", work, "--base", "origin/main")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden.Assert(t, "plan-deletion.txt", []byte(hashes(out, p, true)))
		golden.Assert(t, "plan-deletion-comment.md", []byte(hashes(plan.Comment(p), p, false)))
	})

	t.Run("rollback command", func(t *testing.T) { testRollbackCommand(t, work, planOf) })

	// The rollback that a replay from scratch gets wrong: there every run
	// of the history starts at once on the same clusters and the rollback
	// loses the race for member2. From the recorded state the other runs
	// are long finished, and serve then really rolls it back.
	t.Run("rollback", func(t *testing.T) {
		branch(t, work, "rollback")
		writeFile(t, work, "rollback.yaml", rollbackRun)
		commitAll(t, work, "roll back to snapshot 0")

		scratch, errOut, code := gitfleet(t, "simulate", "--repo", work, "--approve", "--from-status", "none")
		if code != 0 || !strings.Contains(summaryLine(scratch, "back-to-0"), "Failed") {
			t.Fatalf("from scratch, want back-to-0 Failed (the prediction this test guards against): exit %d\n%s%s", code, scratch, errOut)
		}
		recorded, errOut, code := gitfleet(t, "simulate", "--repo", work, "--approve")
		if code != 0 || !strings.Contains(summaryLine(recorded, "back-to-0"), "Succeeded") ||
			!strings.Contains(recorded, "(1 commit(s) replayed)") {
			t.Fatalf("from the recorded state, want back-to-0 Succeeded after replaying one commit: exit %d\n%s%s", code, recorded, errOut)
		}
		if l := summaryLine(recorded, "example-run"); !strings.Contains(l, "resource snapshot 0 on every cluster") {
			t.Errorf("example-run rolled snapshot 0 out, the simulation says %q", l)
		}

		p, errOut, code := planOf(t)
		if code != 0 || len(p.Runs) != 1 || p.Runs[0].Name != "back-to-0" || p.Runs[0].After != fleet.PhaseSucceeded || !p.Runs[0].New {
			t.Fatalf("plan: exit %d, want only back-to-0, new and Succeeded: %+v\n%s", code, p.Runs, errOut)
		}
		if len(p.Snapshots) != 0 {
			t.Errorf("a rollback records no snapshot, plan says %+v", p.Snapshots)
		}

		// What serve does with it: the rollback succeeds.
		gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
		serveUntilIdle(t, remote)
		gitCmd(t, work, "pull", "-q", "--ff-only", "origin", "main")
		if _, errOut, code := gitfleet(t, "approve", "back-to-0-after-canary", "--repo", work, "--commit"); code != 0 {
			t.Fatalf("approve: exit %d: %s", code, errOut)
		}
		gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
		serveUntilIdle(t, remote)
		run := decodeFrom(t, remote, "main", "status/runs/back-to-0.yaml").(*fleet.UpdateRun)
		if run.Phase() != fleet.PhaseSucceeded {
			t.Errorf("serve: back-to-0 is %s, plan said Succeeded", run.Phase())
		}
	})

	// A refused change and a manifest that does not render: both are
	// named (the latter with file and line) and plan exits 1.
	t.Run("refused and broken", func(t *testing.T) {
		gitCmd(t, work, "fetch", "-q")
		gitCmd(t, work, "checkout", "-q", "-B", "broken", "origin/main")
		edit(t, work, "run-2.yaml", "stagedRolloutStrategyName: example-strategy", "stagedRolloutStrategyName: other-strategy")
		writeFile(t, work, "broken.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: broken\nspec:\n  placementName: example-placement\n  bogus: 1\n")
		commitAll(t, work, "a refused change and a typo")
		p, errOut, code := planOf(t)
		if code != 1 || !strings.Contains(errOut, "1 refused change(s) and 1 manifest error(s)") {
			t.Fatalf("exit %d, want 1 naming one refused change and one manifest error: %s", code, errOut)
		}
		if len(p.Refused) != 1 || !strings.Contains(p.Refused[0], "example-run-2 in run-2.yaml was rejected") || !strings.Contains(p.Refused[0], "immutable") {
			t.Errorf("refused %q, want example-run-2's immutable strategy", p.Refused)
		}
		if len(p.ManifestErrors) != 1 || p.ManifestErrors[0].Position() != "broken.yaml:7" || !strings.Contains(p.ManifestErrors[0].Message, "spec.bogus") {
			t.Errorf("manifest errors %+v, want broken.yaml:7 spec.bogus", p.ManifestErrors)
		}
		out, _, code := gitfleet(t, "plan", "--repo", work, "--base", "origin/main")
		if code != 1 || !strings.Contains(out, "  broken.yaml:7: ClusterStagedUpdateRun broken: spec.bogus: unknown field") {
			t.Errorf("table: exit %d, want 1 and the error at broken.yaml:7:\n%s", code, out)
		}
	})

	// What serve does with a change that drops the config map: validate
	// warns before the push, and the snapshot serve records counts the
	// removal in its annotation and in the status commit's subject.
	t.Run("deletion served", func(t *testing.T) {
		gitCmd(t, work, "fetch", "-q")
		gitCmd(t, work, "checkout", "-q", "-B", "served", "origin/main")
		namespaceOnly, _, _ := strings.Cut(readFile(t, work, "workload.yaml"), "---")
		writeFile(t, work, "workload.yaml", namespaceOnly)
		out, errOut, code := gitfleet(t, "validate", "--repo", work)
		if code != 0 || !strings.HasPrefix(out, "Warning: ConfigMap test-namespace/test-cm leaves placement example-placement: resource snapshot 1 in status/ has it") {
			t.Errorf("validate: exit %d, want 0 and the warning first:\n%s%s", code, out, errOut)
		}
		commitAll(t, work, "drop the config map")
		gitCmd(t, work, "push", "-q", "origin", "HEAD:main")
		serveUntilIdle(t, remote)
		snap := decodeFrom(t, remote, "main", "status/snapshots/example-placement/2.yaml").(*fleet.ResourceSnapshot)
		if got := snap.Annotations[fleet.RemovedResourcesAnnotation]; got != "1" {
			t.Errorf("snapshot 2: %s=%q, want \"1\" (annotations %v)", fleet.RemovedResourcesAnnotation, got, snap.Annotations)
		}
		subjects := gitCmd(t, remote, "log", "--format=%s", "main")
		if !strings.Contains(subjects, "status: example-placement snapshot 2 removes 1 resource") {
			t.Errorf("no status commit says the removal:\n%s", subjects)
		}
	})
}

// summaryLine is the line of simulate's summary about run name.
func summaryLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), name+" ") {
			return l
		}
	}
	return ""
}
