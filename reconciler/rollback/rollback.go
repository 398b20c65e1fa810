// Package rollback finds what a failed update run rolls back to and writes
// the run that does it: the resource snapshot index the clusters the run
// changed last had from a run that succeeded, never one their placement
// rejects. serve opens it as a pull request (gitsource/gitops) and
// `gitfleet rollback` writes it into a clone; merging it rolls back through
// the same stages and gates as any run.
package rollback

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// Target is what a rollback rolls out.
type Target struct {
	// Index is the resource snapshot index.
	Index string
	// From is the run that last rolled it out with success on every
	// cluster the failed run changed.
	From string
	// Clusters are the clusters the failed run changed (started updating),
	// in stage order.
	Clusters []string
}

// NoTarget is why a failed run has nothing to roll back to.
type NoTarget struct{ Reason string }

func (e *NoTarget) Error() string { return e.Reason }

// Find picks the rollback target of the run failed among runs (every run
// of the hub or the status tree; others' are ignored) given the indexes
// its placement rejects (fleet.RejectedSnapshots): the index of the run of
// the same placement that succeeded most recently, on every cluster the
// failed run changed, with another index than the failed run's, not
// rejected and still recorded (exists; nil takes every index). No target
// is a *NoTarget saying why.
func Find(failed *fleet.UpdateRun, runs []*fleet.UpdateRun, rejected map[string]string, exists func(index string) bool) (Target, error) {
	return FindReading(failed, runs, func(r *fleet.UpdateRun) (*fleet.UpdateRun, error) { return r, nil }, rejected, exists)
}

// FindReading is Find among runs that may be husks (a hub's runs without
// their stages' clusters: hub.UpdateRuns' ListUpdateRunsWithoutClusters),
// for a hub where a run whole costs a read of its every cluster (on a
// Kubernetes hub, 400 KB from the API server for 1,000 clusters). failed
// must be whole: its clusters say what it changed. Only the runs that
// could be the target are read whole, through whole, most recent success
// first, until one succeeded on every cluster failed changed: never a run
// of another placement, nor one that did not succeed, nor one of a
// rejected, pruned or the failed index. whole returns nil for a run
// deleted since it was listed, which is skipped; its error ends the
// search.
func FindReading(failed *fleet.UpdateRun, runs []*fleet.UpdateRun, whole func(*fleet.UpdateRun) (*fleet.UpdateRun, error),
	rejected map[string]string, exists func(index string) bool) (Target, error) {
	if of := failed.Annotations[fleet.RollbackOfAnnotation]; of != "" {
		return Target{}, &NoTarget{fmt.Sprintf("run `%s` is itself the rollback of `%s`: gitfleet does not roll back a rollback; "+
			"choose the snapshot with gitfleet rollback %s --to N", failed.Name, of, failed.Name)}
	}
	bad := failed.Status.ResourceSnapshotIndexUsed
	if bad == "" {
		return Target{}, &NoTarget{fmt.Sprintf("run `%s` was never initialized: it changed no cluster", failed.Name)}
	}
	changed := Changed(failed)
	if len(changed) == 0 {
		return Target{}, &NoTarget{fmt.Sprintf("run `%s` failed before it changed any cluster: there is nothing to roll back", failed.Name)}
	}
	// The runs that could be the target, by what a husk says.
	var candidates []*fleet.UpdateRun
	for _, r := range runs {
		if r.Namespace != failed.Namespace || r.Name == failed.Name || r.Spec.PlacementName != failed.Spec.PlacementName {
			continue
		}
		if !meta.IsStatusConditionTrue(r.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) {
			continue
		}
		idx := r.Status.ResourceSnapshotIndexUsed
		if idx == "" || idx == bad {
			continue
		}
		if _, no := rejected[idx]; no {
			continue
		}
		if exists != nil && !exists(idx) {
			continue
		}
		candidates = append(candidates, r)
	}
	slices.SortStableFunc(candidates, func(a, b *fleet.UpdateRun) int {
		if c := succeededAt(b).Compare(succeededAt(a).Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	// The most recent that covers the changed clusters, read whole.
	for _, r := range candidates {
		w, err := whole(r)
		if err != nil {
			return Target{}, err
		}
		if w == nil {
			continue // gone since it was listed
		}
		if covers(w, changed) {
			return Target{Index: r.Status.ResourceSnapshotIndexUsed, From: r.Name, Clusters: changed}, nil
		}
	}
	return Target{}, &NoTarget{fmt.Sprintf("no run of placement `%s` succeeded with another resource snapshot than `%s` "+
		"(not a rejected one, still recorded) on every cluster run `%s` changed (%s)", failed.Spec.PlacementName, bad, failed.Name, strings.Join(changed, ", "))}
}

// Changed are the clusters of the run's update stages that started
// updating (succeeded, failed or still in flight), in stage order.
func Changed(r *fleet.UpdateRun) []string {
	v := runview.Of(r)
	var out []string
	for _, s := range v.Stages[:v.Updates] {
		for _, c := range s.Clusters {
			switch c.State {
			case runview.ClusterSucceeded, runview.ClusterFailed, runview.ClusterUpdating:
				out = append(out, c.Name)
			}
		}
	}
	return out
}

// covers reports whether every cluster succeeded in run r.
func covers(r *fleet.UpdateRun, clusters []string) bool {
	ok := map[string]bool{}
	v := runview.Of(r)
	for _, s := range v.Stages[:v.Updates] {
		for _, c := range s.Clusters {
			if c.State == runview.ClusterSucceeded {
				ok[c.Name] = true
			}
		}
	}
	for _, c := range clusters {
		if !ok[c] {
			return false
		}
	}
	return true
}

func succeededAt(r *fleet.UpdateRun) metav1.Time {
	if c := meta.FindStatusCondition(r.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}

// maxRunName is the longest run name the CRD takes.
const maxRunName = 63

// Name is the name of the run that rolls failed back: <run>-rollback, or
// for a long name its start and a hash of it.
func Name(failed string) string {
	name := failed + "-rollback"
	if len(name) <= maxRunName {
		return name
	}
	sum := sha256.Sum256([]byte(failed))
	return fmt.Sprintf("%s-rollback-%x", strings.TrimRight(failed[:maxRunName-len("-rollback-")-8], "-."), sum[:4])
}

// Branch is the branch name (below gitfleet/rollback/) of the pull request
// that rolls the run back: <run>, or <namespace>.<run>.
func Branch(failed *fleet.UpdateRun) string {
	if failed.Namespace != "" {
		return failed.Namespace + "." + failed.Name
	}
	return failed.Name
}

// File is where the rollback run's file goes, below the hub content
// folder.
func File(failed *fleet.UpdateRun) string {
	return "rollbacks/" + Branch(failed) + ".yaml"
}

// Manifest is the rollback run's file: a run of the failed run's placement
// and strategy that rolls out index, annotated with the run it rolls back,
// with a comment saying why. why is what failed ("" for the run's own
// failure).
func Manifest(failed *fleet.UpdateRun, t Target, why string) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if why == "" {
		why = "it failed"
		if c := meta.FindStatusCondition(failed.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil && c.Message != "" {
			why = "it failed: " + c.Message
		}
	}
	w("# Rolls back run %s (resource snapshot %s): %s\n", failed.Name, failed.Status.ResourceSnapshotIndexUsed, oneLine(why))
	if t.From != "" {
		w("# Resource snapshot %s is the last that succeeded on %s (run %s).\n", t.Index, strings.Join(t.Clusters, ", "), t.From)
	}
	w("# Merging this file starts the rollback through the strategy's stages and approvals.\n")
	w("apiVersion: %s\n", fleet.SchemeGroupVersion.String())
	w("kind: %s\n", fleet.UpdateRunKind(failed.Namespace))
	w("metadata:\n  name: %s\n", Name(failed.Name))
	if failed.Namespace != "" {
		w("  namespace: %s\n", failed.Namespace)
	}
	w("  annotations:\n    %s: %s\n", fleet.RollbackOfAnnotation, failed.Name)
	w("spec:\n  placementName: %s\n  resourceSnapshotIndex: %q\n  stagedRolloutStrategyName: %s\n  state: Run\n",
		failed.Spec.PlacementName, t.Index, failed.Spec.StagedUpdateStrategyName)
	return []byte(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// SupersededBy names a run of the failed run's placement initialized after
// it ("" when none): the fleet moved on, and a rollback proposed now would
// undo that run too.
func SupersededBy(failed *fleet.UpdateRun, runs []*fleet.UpdateRun) string {
	at := initializedAt(failed)
	for _, r := range runs {
		if r.Namespace == failed.Namespace && r.Name != failed.Name && r.Spec.PlacementName == failed.Spec.PlacementName &&
			r.Annotations[fleet.RollbackOfAnnotation] != failed.Name && initializedAt(r).After(at.Time) {
			return r.Name
		}
	}
	return ""
}

func initializedAt(r *fleet.UpdateRun) metav1.Time {
	if c := meta.FindStatusCondition(r.Status.Conditions, fleet.StagedUpdateRunConditionInitialized); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}
