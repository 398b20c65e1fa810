package gitops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// approvalInfo is what an approval pull request says: what merging it
// releases.
type approvalInfo struct {
	Request, Run, Placement string
	// Stage is the request's stage; After: the request is an after-stage
	// task (approving finishes Stage), else a before-stage one (approving
	// starts it).
	Stage string
	After bool
	// Released is the stage whose clusters approving lets update (nil: an
	// after-stage request of the last stage, which finishes the run).
	Released *stageClusters
	// SnapshotIndex and Commit: the resource snapshot the run rolls out
	// and the commit it was recorded from.
	SnapshotIndex, Commit string
	Done                  []doneStage
	// Changes: what the released clusters get, per snapshot they have now.
	Changes []snapshotChange
	// Deletes: for the deletion stage's request, the clusters that lose
	// the placement's resources when it is approved.
	Deletes []string
	// Budget: the run's failure budget and what is used (nil without a
	// failure policy; forge_budget.go).
	Budget *failureBudget
	// Windows: the RolloutWindows of the released stage (nil: none;
	// forge_window.go).
	Windows *stageWindows
}

type stageClusters struct {
	Name      string
	Index, Of int // 1-based
	Clusters  []string
}

type doneStage struct {
	Name       string
	Clusters   []string
	Start, End *time.Time
}

// snapshotChange is what changes on Clusters, which have snapshot From
// ("" for none: nothing was rolled out to them yet).
type snapshotChange struct {
	Clusters   []string
	From       string
	FromCommit string
	// FromUnknown: From is no longer recorded (pruned), so the change
	// cannot be listed.
	FromUnknown bool
	Resources   []resourceChange
}

// resourceChange is one line of the body's change list.
type resourceChange = resourcesnapshot.Change

// approvalInfoFor reads what the approval request key releases from the
// hub.
func approvalInfoFor(ctx context.Context, h hub.Hub, key hub.Key, now time.Time) (*approvalInfo, error) {
	ar, err := h.GetApprovalRequest(ctx, key)
	if err != nil {
		return nil, err
	}
	run, err := h.GetUpdateRun(ctx, hub.Key{Namespace: key.Namespace, Name: ar.Spec.TargetUpdateRun})
	if err != nil {
		return nil, err
	}
	info := &approvalInfo{Request: ar.Name, Run: run.Name, Placement: run.Spec.PlacementName, Stage: ar.Spec.TargetStage,
		After: ar.Labels[fleet.TaskTypeLabel] == fleet.AfterStageTaskLabelValue, SnapshotIndex: run.Status.ResourceSnapshotIndexUsed,
		Budget: failureBudgetOf(run)}
	stages := run.Status.StagesStatus
	at := -1
	for i, s := range stages {
		if s.StageName == ar.Spec.TargetStage {
			at = i
		}
	}
	released := at
	if info.After {
		released = at + 1
	}
	if del := run.Status.DeletionStageStatus; del != nil && ar.Spec.TargetStage == del.StageName {
		// The deletion stage comes after every update stage.
		at, released = len(stages), len(stages)
		info.Deletes = clusterNames(*del)
	}
	for i := 0; i < released && i < len(stages); i++ {
		s := stages[i]
		d := doneStage{Name: s.StageName, Clusters: clusterNames(s)}
		if s.StartTime != nil {
			t := s.StartTime.UTC()
			d.Start = &t
		}
		if s.EndTime != nil {
			t := s.EndTime.UTC()
			d.End = &t
		}
		info.Done = append(info.Done, d)
	}
	placement := hub.Key{Namespace: run.Namespace, Name: run.Spec.PlacementName}
	snaps, err := h.ListResourceSnapshots(ctx, placement)
	if err != nil {
		return nil, err
	}
	groups := resourcesnapshot.Of(snaps)
	targetGroup, _ := groups.Find(info.SnapshotIndex)
	target, err := targetGroup.Resources()
	if err != nil {
		return nil, err
	}
	info.Commit = targetGroup.Commit()
	if at < 0 || released >= len(stages) {
		return info, nil
	}
	s := stages[released]
	info.Released = &stageClusters{Name: s.StageName, Index: released + 1, Of: len(stages), Clusters: clusterNames(s)}
	if info.Windows, err = windowsOf(ctx, h, run, released, info.Released.Clusters, now); err != nil {
		return nil, err
	}
	bindings, err := h.ListBindings(ctx, placement)
	if err != nil {
		return nil, err
	}
	has := map[string]string{} // cluster → index of the snapshot it has
	for _, b := range bindings {
		if g, ok := groups.Named(b.Spec.ResourceSnapshotName); ok {
			has[b.Spec.TargetCluster] = strconv.Itoa(g.Index)
		} else if b.Spec.ResourceSnapshotName != "" {
			has[b.Spec.TargetCluster] = "?" + b.Spec.ResourceSnapshotName
		}
	}
	byFrom := map[string]int{}
	for _, c := range info.Released.Clusters {
		from := has[c]
		i, ok := byFrom[from]
		if !ok {
			i = len(info.Changes)
			byFrom[from] = i
			ch := snapshotChange{From: from}
			switch {
			case strings.HasPrefix(from, "?"):
				ch.From, ch.FromUnknown = strings.TrimPrefix(from, "?"), true
			case from == "":
				ch.Resources = resourcesnapshot.Diff(nil, target)
			default:
				fromGroup, _ := groups.Find(from)
				have, err := fromGroup.Resources()
				if err != nil {
					return nil, err
				}
				ch.FromCommit = fromGroup.Commit()
				ch.Resources = resourcesnapshot.Diff(have, target)
			}
			info.Changes = append(info.Changes, ch)
		}
		info.Changes[i].Clusters = append(info.Changes[i].Clusters, c)
	}
	return info, nil
}

func clusterNames(s fleet.StageUpdatingStatus) []string {
	names := make([]string, len(s.Clusters))
	for i, c := range s.Clusters {
		names[i] = c.ClusterName
	}
	return names
}

func (a *approvalInfo) title() string {
	if a.After {
		return fmt.Sprintf("Approve %s: finish stage %s", a.Run, a.Stage)
	}
	return fmt.Sprintf("Approve %s: start stage %s", a.Run, a.Stage)
}

// body is the pull request's description, in Markdown.
func (a *approvalInfo) body() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	what := fmt.Sprintf("lets stage `%s` of run `%s` start", a.Stage, a.Run)
	if a.After {
		what = fmt.Sprintf("finishes stage `%s` of run `%s`", a.Stage, a.Run)
	}
	w("Merging this pull request approves `%s`: it %s (placement `%s`).\n\n", a.Request, what, a.Placement)
	w("gitfleet opened it; branch protection and required reviews on this branch decide who may merge it.\n")

	switch {
	case a.Deletes != nil:
		w("\n### Deletes: the resources of placement `%s` from %d clusters\n\n", a.Placement, len(a.Deletes))
		for i, c := range a.Deletes {
			w("%d. %s\n", i+1, c)
		}
		w("\nObjects annotated `%s: %s` stay on them.\n", fleet.PruneAnnotation, fleet.PruneDisabled)
	case a.Released == nil && a.After:
		w("\n%s is the last stage: approving finishes the run; no cluster changes.\n", "`"+a.Stage+"`")
	case a.Released != nil:
		next := ""
		if a.After {
			next = "The run then goes on with "
		}
		w("\n### %sStage %d/%d `%s`: %d clusters, in this order\n\n", next, a.Released.Index, a.Released.Of, a.Released.Name, len(a.Released.Clusters))
		for i, c := range a.Released.Clusters {
			w("%d. %s\n", i+1, c)
		}
	}

	w("\n### Snapshot\n\n")
	if a.Commit != "" {
		w("Resource snapshot index %s of placement `%s`, recorded from commit %s.\n", a.SnapshotIndex, a.Placement, a.Commit)
	} else {
		w("Resource snapshot index %s of placement `%s`.\n", a.SnapshotIndex, a.Placement)
	}

	a.Budget.write(w)
	a.Windows.write(w)

	w("\n### Stages done\n\n")
	if len(a.Done) == 0 {
		w("None: this is the first stage.\n")
	} else {
		w("| stage | clusters | started | finished |\n|---|---|---|---|\n")
		for _, d := range a.Done {
			w("| %s | %s | %s | %s |\n", d.Name, strings.Join(d.Clusters, ", "), timeOrDash(d.Start), timeOrDash(d.End))
		}
	}

	if a.Released != nil {
		w("\n### What changes on these clusters\n")
		for _, ch := range a.Changes {
			switch {
			case ch.FromUnknown:
				w("\n%s snapshot %s, which is no longer recorded: the change cannot be listed.\n", have(ch.Clusters), ch.From)
				continue
			case ch.From == "":
				w("\n%s nothing of placement `%s` yet and get%s snapshot %s:\n\n", have(ch.Clusters), a.Placement, verbS(ch.Clusters), a.SnapshotIndex)
			case ch.From == a.SnapshotIndex:
				w("\n%s already snapshot %s: nothing changes.\n", have(ch.Clusters), ch.From)
				continue
			default:
				from := ch.From
				if ch.FromCommit != "" {
					from += " (commit " + shortSHA(ch.FromCommit) + ")"
				}
				w("\n%s go%s from snapshot %s to %s:\n\n", strings.Join(ch.Clusters, ", "), esS(ch.Clusters), from, a.SnapshotIndex)
			}
			if len(ch.Resources) == 0 {
				w("No resource changes.\n")
				continue
			}
			w("| change | kind | namespace | name |\n|---|---|---|---|\n")
			for _, r := range ch.Resources {
				ns := r.Namespace
				if ns == "" {
					ns = "–"
				}
				w("| %s | %s | %s | %s |\n", r.Change, r.Kind, ns, r.Name)
			}
		}
	}
	return b.String()
}

// have is "a, b have" or "a has".
func have(clusters []string) string {
	if len(clusters) == 1 {
		return clusters[0] + " has"
	}
	return strings.Join(clusters, ", ") + " have"
}

func verbS(clusters []string) string {
	if len(clusters) == 1 {
		return "s"
	}
	return ""
}

func esS(clusters []string) string {
	if len(clusters) == 1 {
		return "es"
	}
	return ""
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "–"
	}
	return t.Format(time.RFC3339)
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
