package web

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/runview"
	"github.com/gitfleet/gitfleet/status"
)

// TileLimit is how many clusters a stage shows as tiles of their own; a
// larger stage shows the clusters that need a look (updating, stuck,
// failed) as tiles and the others as one tile per state, which opens the
// clusters of that state a page at a time.
const TileLimit = 200

// pageSize is how many tiles a page of one stage's clusters of one state
// shows.
const pageSize = 500

// approveBranchPrefix is where gitfleet pushes the branch that approves a
// request (gitsource.ApproveBranchPrefix: gitsource is a floor above).
const approveBranchPrefix = "gitfleet/approve/"

// runRow is a run on the fleet page.
type runRow struct {
	Name, Namespace, Href, Placement, Phase, Stage, Waiting, Age string
	Done, Total                                                  int
}

// placementRow is a placement on the fleet page.
type placementRow struct {
	Name, Namespace, Latest, LatestHref string
	Have, Total                         int
}

type fleetPage struct {
	Runs                           []runRow
	Placements                     []placementRow
	Phase, Placement, Namespace    string
	Phases, PlacementNames, Spaces []string
	Problems                       []string
}

func runHref(ns, name string) string {
	if ns != "" {
		return "/runs/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	}
	return "/runs/" + url.PathEscape(name)
}

func snapshotHref(ns, placement string, index int) string {
	p := "/snapshots/"
	if ns != "" {
		p += url.PathEscape(ns) + "/"
	}
	return p + url.PathEscape(placement) + "/" + strconv.Itoa(index)
}

func clusterHref(name string) string { return "/clusters/" + url.PathEscape(name) }

// age says how long ago t was, as kubectl's AGE column does.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func (m *model) fleetPage(now time.Time, q url.Values) fleetPage {
	p := fleetPage{Phase: q.Get("phase"), Placement: q.Get("placement"), Namespace: q.Get("namespace"), Problems: m.problems}
	seen := map[string]map[string]bool{"phase": {}, "placement": {}, "ns": {}}
	add := func(set, v string, out *[]string) {
		if v != "" && !seen[set][v] {
			seen[set][v] = true
			*out = append(*out, v)
		}
	}
	for _, r := range m.runs {
		v := runview.Of(r)
		add("phase", v.Phase, &p.Phases)
		add("placement", r.Spec.PlacementName, &p.PlacementNames)
		add("ns", r.Namespace, &p.Spaces)
		if (p.Phase != "" && v.Phase != p.Phase) || (p.Placement != "" && r.Spec.PlacementName != p.Placement) ||
			(p.Namespace != "" && r.Namespace != p.Namespace) {
			continue
		}
		row := runRow{Name: r.Name, Namespace: r.Namespace, Href: runHref(r.Namespace, r.Name), Placement: r.Spec.PlacementName,
			Phase: v.Phase, Waiting: v.Waiting.String(), Done: v.ClustersDone, Total: v.Clusters, Age: age(now, r.CreationTimestamp.Time)}
		if s := v.Stage(); s != nil {
			row.Stage = s.Name
		}
		p.Runs = append(p.Runs, row)
	}
	slices.Sort(p.Phases)
	slices.Sort(p.PlacementNames)
	slices.Sort(p.Spaces)
	for _, pl := range m.placements {
		row := placementRow{Name: pl.Name, Namespace: pl.Namespace}
		bindings := m.bindingsOf(pl.Namespace, pl.Name)
		row.Total = len(bindings)
		if g, ok := m.snapshots[hub.Key{Namespace: pl.Namespace, Name: pl.Name}].Latest(); ok {
			row.Latest, row.LatestHref = strconv.Itoa(g.Index), snapshotHref(pl.Namespace, pl.Name, g.Index)
			for _, b := range bindings {
				if b.Spec.ResourceSnapshotName == g.Master.Name {
					row.Have++
				}
			}
		}
		p.Placements = append(p.Placements, row)
	}
	return p
}

// tile is a cluster of a stage.
type tile struct {
	ID, Name, State, Href string
	// Detail is what hovering or focusing the tile shows: the failure,
	// then the cluster's conditions.
	Detail []string
}

// group stands for the clusters of one state in a large stage.
type group struct {
	State, Href string
	Count       int
}

type stageColumn struct {
	Name, Label, State, Message string
	Done, Total                 int
	Current                     bool
	Tiles                       []tile
	Groups                      []group
	Before, After               []gateTask
}

// gateTask is a before- or after-stage task.
type gateTask struct {
	Type, State string
	// Approval: the request, who approved and when, the pull request
	// that approves it, the command that does.
	Request, ApprovedBy, PullRequest, Command string
	// TimedWait: when it ends (or ended), or how long it waits.
	When   string
	Detail []string
}

type timelineEntry struct {
	Hash, Short, Subject, Author, Time, Href string
}

type runPage struct {
	Name, Namespace, Placement, Phase, Waiting, Snapshot, SnapshotHref, Message, Rev string
	Done, Total                                                                      int
	Stages                                                                           []stageColumn
	Timeline                                                                         []timelineEntry
	// Subset is set when the page shows one state's clusters of a large
	// stage: Stage, State, the page and its neighbours.
	Subset *subset
}

type subset struct {
	Stage, State, Prev, Next string
	Page, Pages, Count       int
	Tiles                    []tile
}

// conditionLines are a status's conditions for people, one a line.
func conditionLines(cs []metav1.Condition) []string {
	var out []string
	for _, c := range cs {
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		if !c.LastTransitionTime.IsZero() {
			s += " at " + c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if c.Message != "" {
			s += ": " + c.Message
		}
		out = append(out, s)
	}
	return out
}

func stageStatuses(r *fleet.UpdateRun) []*fleet.StageUpdatingStatus {
	var out []*fleet.StageUpdatingStatus
	for i := range r.Status.StagesStatus {
		out = append(out, &r.Status.StagesStatus[i])
	}
	if d := r.Status.DeletionStageStatus; d != nil {
		out = append(out, d)
	}
	return out
}

// tileState is the state a tile shows: runview's cluster state, or stuck
// for a cluster in flight in a stuck run.
func tileState(v runview.View, stage runview.Stage, c runview.Cluster) string {
	if c.State == runview.ClusterUpdating && v.Phase == fleet.PhaseStuck && slices.Contains(v.Waiting.Clusters, c.Name) {
		return "stuck"
	}
	return strings.ToLower(string(c.State))
}

func (s *Server) runPage(ctx context.Context, m *model, r *fleet.UpdateRun, q url.Values) runPage {
	v := runview.Of(r)
	p := runPage{Name: r.Name, Namespace: r.Namespace, Placement: r.Spec.PlacementName, Phase: v.Phase,
		Waiting: v.Waiting.String(), Done: v.ClustersDone, Total: v.Clusters, Rev: m.rev}
	if idx := r.Status.ResourceSnapshotIndexUsed; idx != "" {
		p.Snapshot = idx
		if i, err := strconv.Atoi(idx); err == nil {
			p.SnapshotHref = snapshotHref(r.Namespace, r.Spec.PlacementName, i)
		}
	}
	switch v.Phase {
	case fleet.PhaseFailed, fleet.PhaseInitFailed, fleet.PhaseStuck:
		// What went wrong: the condition that says so.
		for _, c := range r.Status.Conditions {
			if c.Status == metav1.ConditionFalse && c.Message != "" {
				p.Message = c.Message
			}
		}
	}
	statuses := stageStatuses(r)
	wantStage, wantState := q.Get("stage"), q.Get("state")
	for i, st := range v.Stages {
		col := stageColumn{Name: st.Name, Label: st.Label(), State: strings.ToLower(string(st.State)), Message: st.Message,
			Done: st.Done, Total: st.Total, Current: i == v.Current}
		raw := statuses[i]
		tiles := make([]tile, len(st.Clusters))
		for j, c := range st.Clusters {
			t := tile{ID: fmt.Sprintf("c-%d-%d", i, j), Name: c.Name, State: tileState(v, st, c), Href: clusterHref(c.Name)}
			if j < len(raw.Clusters) {
				t.Detail = conditionLines(raw.Clusters[j].Conditions)
			}
			tiles[j] = t
		}
		if wantStage == st.Name && wantState != "" {
			p.Subset = pageOf(tiles, st.Name, wantState, q.Get("page"), runHref(r.Namespace, r.Name))
		}
		if len(tiles) <= TileLimit {
			col.Tiles = tiles
		} else {
			col.Tiles, col.Groups = grouped(tiles, runHref(r.Namespace, r.Name), st.Name)
		}
		col.Before = s.gate(ctx, m, r, v, i, raw.BeforeStageTaskStatus, nil)
		var planned []fleet.StageTask
		if snap := r.Status.StagedUpdateStrategySnapshot; snap != nil && !st.Deletion && i < len(snap.Stages) {
			planned = snap.Stages[i].AfterStageTasks
		}
		col.After = s.gate(ctx, m, r, v, i, raw.AfterStageTaskStatus, planned)
		p.Stages = append(p.Stages, col)
	}
	if specs, err := status.HistoryPathspecs(r); err == nil && s.cfg.Source != nil {
		commits, err := s.cfg.Source.History(ctx, m.rev, 50, specs...)
		if err == nil {
			for _, c := range commits {
				e := timelineEntry{Hash: c.Hash, Short: c.Short(), Subject: c.Subject, Author: c.Author, Time: c.Time.Format(time.RFC3339)}
				if s.cfg.CommitURL != nil {
					e.Href = s.cfg.CommitURL(c.Hash)
				}
				p.Timeline = append(p.Timeline, e)
			}
		}
	}
	return p
}

// grouped keeps the tiles that need a look (up to TileLimit) and counts
// the others by state.
func grouped(tiles []tile, href, stage string) (keep []tile, groups []group) {
	counts := map[string]int{}
	for _, t := range tiles {
		switch t.State {
		case "updating", "stuck", "failed":
			if len(keep) < TileLimit {
				keep = append(keep, t)
				continue
			}
		}
		counts[t.State]++
	}
	for _, st := range []string{"failed", "stuck", "updating", "succeeded", "skipped", "pending"} {
		if counts[st] > 0 {
			groups = append(groups, group{State: st, Count: counts[st],
				Href: href + "?" + url.Values{"stage": {stage}, "state": {st}}.Encode()})
		}
	}
	return keep, groups
}

// pageOf is one page of the tiles of a state.
func pageOf(tiles []tile, stage, state, page, href string) *subset {
	var all []tile
	for _, t := range tiles {
		if t.State == state {
			all = append(all, t)
		}
	}
	n, _ := strconv.Atoi(page)
	pages := max(1, (len(all)+pageSize-1)/pageSize)
	n = min(max(n, 1), pages)
	out := &subset{Stage: stage, State: state, Page: n, Pages: pages, Count: len(all),
		Tiles: all[min((n-1)*pageSize, len(all)):min(n*pageSize, len(all))]}
	link := func(n int) string {
		return href + "?" + url.Values{"stage": {stage}, "state": {state}, "page": {strconv.Itoa(n)}}.Encode()
	}
	if n > 1 {
		out.Prev = link(n - 1)
	}
	if n < pages {
		out.Next = link(n + 1)
	}
	return out
}

// gate describes a stage's tasks on one side; planned are the strategy's
// tasks, for their wait times.
func (s *Server) gate(ctx context.Context, m *model, r *fleet.UpdateRun, v runview.View, stage int, tasks []fleet.StageTaskStatus, planned []fleet.StageTask) []gateTask {
	var out []gateTask
	for k, t := range tasks {
		g := gateTask{Detail: conditionLines(t.Conditions)}
		switch t.Type {
		case fleet.StageTaskTypeApproval:
			g.Type, g.Request = "approval", t.ApprovalRequestName
			g.State = "not requested yet"
			if meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionApprovalRequestCreated) {
				g.State = "waiting for approval"
			}
			ar := m.approvals[hub.Key{Namespace: r.Namespace, Name: t.ApprovalRequestName}]
			approved := meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
			if ar != nil && meta.IsStatusConditionTrue(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) {
				approved = true
			}
			if approved {
				g.State = "approved"
				g.ApprovedBy = approver(ar)
			} else if g.State == "waiting for approval" {
				g.Command = "gitfleet approve " + t.ApprovalRequestName
				if r.Namespace != "" {
					g.Command += " -n " + r.Namespace
				}
				g.Command += " --commit && git push"
				if s.cfg.PullRequest != nil {
					name := t.ApprovalRequestName
					if r.Namespace != "" {
						name = r.Namespace + "." + name
					}
					g.PullRequest = s.cfg.PullRequest(ctx, approveBranchPrefix+name)
				}
			}
		case fleet.StageTaskTypeTimedWait:
			g.Type = "timed wait"
			c := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionWaitTimeElapsed)
			switch {
			case c != nil && c.Status == metav1.ConditionTrue:
				g.State, g.When = "elapsed", "ended "+c.LastTransitionTime.UTC().Format(time.RFC3339)
			case stage == v.Current && v.Waiting.TimedWait:
				g.State, g.When = "waiting", v.Waiting.TimedWaitString()
			default:
				g.State = "not started"
				if k < len(planned) && planned[k].WaitTime != nil {
					g.When = "waits " + planned[k].WaitTime.Duration.String()
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// approver says who approved a request: the person serve recorded on it
// from Git (status.Approver), else the reason of its Approved condition
// (an approval given on a kube hub with kubectl), and when.
func approver(ar *fleet.ApprovalRequest) string {
	if ar == nil {
		return ""
	}
	by := status.Approver(ar)
	if c := meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved); c != nil {
		if by == "" {
			by = c.Reason
		}
		if !c.LastTransitionTime.IsZero() {
			by += " at " + c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
	}
	return by
}

type bindingRow struct {
	Placement, Namespace, State, Snapshot, SnapshotHref string
	Overrides, Errors, Conditions                       []string
}

type clusterPage struct {
	Name       string
	Conditions []string
	Bindings   []bindingRow
}

func (m *model) clusterPage(name string) (clusterPage, bool) {
	p := clusterPage{Name: name}
	c := m.cluster(name)
	if c != nil {
		p.Conditions = conditionLines(c.Status.Conditions)
	}
	for _, b := range m.bindings {
		if b.Spec.TargetCluster != name {
			continue
		}
		pl := b.Labels[fleet.PlacementTrackingLabel]
		row := bindingRow{Placement: pl, Namespace: b.Namespace, State: string(b.Spec.State), Snapshot: b.Spec.ResourceSnapshotName}
		if g, ok := m.snapshots[hub.Key{Namespace: b.Namespace, Name: pl}].Named(b.Spec.ResourceSnapshotName); ok {
			row.Snapshot = fmt.Sprintf("%d (%s)", g.Index, b.Spec.ResourceSnapshotName)
			row.SnapshotHref = snapshotHref(b.Namespace, pl, g.Index)
		}
		row.Overrides = append(row.Overrides, b.Spec.ClusterResourceOverrideSnapshots...)
		for _, o := range b.Spec.ResourceOverrideSnapshots {
			row.Overrides = append(row.Overrides, o.Namespace+"/"+o.Name)
		}
		for _, f := range b.Status.FailedPlacements {
			id := f.Kind + " " + f.Name
			if f.Namespace != "" {
				id = f.Kind + " " + f.Namespace + "/" + f.Name
			}
			row.Errors = append(row.Errors, id+": "+f.Condition.Message)
		}
		for _, cond := range b.Status.Conditions {
			if cond.Status == metav1.ConditionFalse && cond.Message != "" {
				row.Errors = append(row.Errors, cond.Type+": "+cond.Message)
			}
		}
		row.Conditions = conditionLines(b.Status.Conditions)
		p.Bindings = append(p.Bindings, row)
	}
	return p, c != nil || len(p.Bindings) > 0
}

type snapshotPage struct {
	Placement, Namespace, Commit, PrevHref, NextHref string
	Index, Prev                                      int
	HasPrev                                          bool
	Changes                                          []resourcesnapshot.Change
	Error                                            string
}

func (m *model) snapshotPage(ns, placement string, index int) (snapshotPage, bool) {
	gs := m.snapshots[hub.Key{Namespace: ns, Name: placement}]
	g, ok := gs.At(index)
	if !ok {
		return snapshotPage{}, false
	}
	p := snapshotPage{Placement: placement, Namespace: ns, Index: index, Commit: g.Commit()}
	want, err := g.Resources()
	if err != nil {
		p.Error = err.Error()
		return p, true
	}
	have := map[resourcesnapshot.Resource][]byte{}
	if prev, ok := gs.Before(index); ok {
		p.HasPrev, p.Prev, p.PrevHref = true, prev.Index, snapshotHref(ns, placement, prev.Index)
		if have, err = prev.Resources(); err != nil {
			p.Error = err.Error()
			return p, true
		}
	}
	for _, next := range gs {
		if next.Index > index {
			p.NextHref = snapshotHref(ns, placement, next.Index)
			break
		}
	}
	p.Changes = resourcesnapshot.Diff(have, want)
	return p, true
}
