// Package plan previews what merging a change into the tracked branch would
// do to the fleet — `gitfleet plan`, and the comment serve posts on pull
// requests. It does not guess: it builds the merge commit in a scratch
// clone, restores the hub from the status/ tree gitfleet recorded at the
// base (as a restarted serve would), records the merge's resource
// snapshots, admits its fleet objects with the API server's rules, and runs
// the real engine in virtual time (the simulate package), approving only
// the gates the change itself opens.
package plan

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// Options say which change to plan.
type Options struct {
	// Repo is a local Git repository (a clone or work tree of the fleet
	// repository).
	Repo string
	// Base is the revision the change would merge into (the tracked
	// branch, e.g. origin/main).
	Base string
	// Head is the change (default "HEAD": the work tree's commit).
	Head string
	// Status is the revision whose status/ tree holds gitfleet's recorded
	// state (default Base; a --status-branch layout names that branch).
	Status string
	// Path is the hub content folder inside the repository (default ".").
	Path string
	// Until bounds the virtual time (default 24h).
	Until time.Duration
	// At is the instant the merge is assumed at, from which RolloutWindows
	// and freezes are evaluated (zero: the recorded status commit's time).
	At time.Time
	// StuckThreshold is the engine's stuck threshold (default 5m).
	StuckThreshold time.Duration
	// Limits, MaxFileSize and MaxTotalSize bound each commit's render, as
	// serve's flags of the same names do (simulate.Options).
	Limits                    renderproc.Limits
	MaxFileSize, MaxTotalSize int64
	Log                       *slog.Logger
}

// Plan is what merging a change would do. Its JSON form is what
// `gitfleet plan -o json|yaml` prints.
type Plan struct {
	// Base and Head are the commits (full hashes); Status is the commit
	// whose status/ tree the plan starts from (empty: no recorded state,
	// the plan replays Base's history into an empty hub).
	Base   string `json:"base"`
	Head   string `json:"head"`
	Status string `json:"status,omitempty"`
	// HeadSubject is the first line of Head's message.
	HeadSubject string `json:"headSubject,omitempty"`

	// Deletions are what the merge deletes from member clusters, first
	// because they are what a reviewer must not miss.
	Deletions []Deletion `json:"deletions,omitempty"`
	Snapshots []Snapshot `json:"snapshots,omitempty"`
	Runs      []Run      `json:"runs,omitempty"`
	// Refused are the changes the API server would refuse, one line each.
	Refused        []string        `json:"refused,omitempty"`
	ManifestErrors []ManifestError `json:"manifestErrors,omitempty"`
	// HeadRefused says the merge does not render: gitfleet refuses it
	// whole (ManifestErrors say why), so nothing of it reaches the hub.
	HeadRefused bool `json:"headRefused,omitempty"`
	// HeadError is why the merge does not render when no manifest says
	// it: its render was stopped at --render-timeout or
	// --render-memory-limit, as serve would stop it.
	HeadError string `json:"headError,omitempty"`
	// Elapsed is the virtual time the preview covers.
	Elapsed metav1.Duration `json:"elapsed"`
}

// Failed reports whether the change has manifest errors or refused
// changes: `gitfleet plan` exits non-zero then.
func (p *Plan) Failed() bool { return len(p.Refused) > 0 || len(p.ManifestErrors) > 0 || p.HeadRefused }

// Deletion is an object the merge deletes from member clusters: a selected
// resource that the snapshot a run rolls out no longer has, or every
// resource of a placement on the clusters that leave it (the run's
// deletion stage).
type Deletion struct {
	Placement string `json:"placement"`
	// Resource is "Kind namespace/name"; empty for every resource of the
	// placement.
	Resource string `json:"resource,omitempty"`
	// Snapshot is the resource snapshot index whose rollout deletes it.
	Snapshot string `json:"resourceSnapshotIndex,omitempty"`
	// Run is the run that deletes it; empty when no run of the plan rolls
	// Snapshot out.
	Run string `json:"run,omitempty"`
	// Clusters have it now: in the run's rollout order, or by name when no
	// run rolls it out.
	Clusters []string `json:"clusters,omitempty"`
}

// Snapshot is a new resource snapshot the merge records.
type Snapshot struct {
	Placement string `json:"placement"`
	Index     string `json:"index"`
	// Commit is where it comes from: Head for the merge itself, or a
	// commit of Base that gitfleet had not processed yet.
	Commit string `json:"commit"`
	// Previous is the placement's latest index before (empty: none).
	Previous string `json:"previous,omitempty"`
	// Changes compare the selected resources with Previous's.
	Changes []ResourceChange `json:"changes,omitempty"`
	// Clusters are the placement's clusters and the index each has now.
	Clusters []ClusterIndex `json:"clusters,omitempty"`
}

// ResourceChange is one selected resource that differs from the previous
// snapshot.
type ResourceChange struct {
	// Change is Added, Changed or Removed.
	Change   string `json:"change"`
	Resource string `json:"resource"`
}

// ClusterIndex is the resource snapshot index a cluster has.
type ClusterIndex struct {
	Cluster string `json:"cluster"`
	Index   string `json:"index,omitempty"`
}

// Run is an update run the merge starts or moves.
type Run struct {
	Name      string `json:"name"`
	Placement string `json:"placement"`
	Strategy  string `json:"strategy"`
	// Snapshot is the resource snapshot index it rolls out.
	Snapshot string `json:"resourceSnapshotIndex,omitempty"`
	// New is true for a run the change adds.
	New bool `json:"new,omitempty"`
	// Before and After are its phases at the base and at the end of the
	// preview; Detail says where it ends, in words.
	Before string  `json:"before"`
	After  string  `json:"after"`
	Detail string  `json:"detail,omitempty"`
	Stages []Stage `json:"stages,omitempty"`
	// Deleting are the clusters its deletion stage removes the placement's
	// resources from.
	Deleting []string `json:"deleting,omitempty"`
	// RetryOf is the run this one retries (spec.retryOf).
	RetryOf string `json:"retryOf,omitempty"`
	// Unmatched are the clusters no stage selects: left out
	// (clusterSet.unmatched Ignore or Allow), or why initialization fails.
	Unmatched []string `json:"unmatchedClusters,omitempty"`
	// Pending joined the placement after a run that freezes its cluster
	// set was initialized; Skipped left it during the run.
	Pending  []string `json:"pendingClusters,omitempty"`
	Skipped  []string `json:"skippedClusters,omitempty"`
	Timeline []Event  `json:"timeline,omitempty"`
}

// Stage is one stage of a run's plan.
type Stage struct {
	Name string `json:"name"`
	// Clusters in rollout order.
	Clusters []string `json:"clusters"`
	Before   []Gate   `json:"beforeStageTasks,omitempty"`
	After    []Gate   `json:"afterStageTasks,omitempty"`
	// Start and End are virtual offsets from the merge (absent: before
	// the merge, for a run that was under way, or not within the preview).
	Start *metav1.Duration `json:"start,omitempty"`
	End   *metav1.Duration `json:"end,omitempty"`
	// FailureBudget is set in a run with a failure policy (budget.go).
	FailureBudget *FailureBudget `json:"failureBudget,omitempty"`
}

// Gate is a before- or after-stage task, or a RolloutWindow the stage's
// clusters start in.
type Gate struct {
	// Type is Approval, TimedWait, Metric or Window.
	Type string `json:"type"`
	// Window names the RolloutWindow (Type Window).
	Window string `json:"window,omitempty"`
	// ApprovalRequest names the request a person approves (or, for a
	// Metric task, its gate).
	ApprovalRequest string `json:"approvalRequest,omitempty"`
	// Wait is a TimedWait's duration.
	Wait *metav1.Duration `json:"wait,omitempty"`
	// Metric is what a Metric task's gate decides on.
	Metric *MetricGate `json:"metric,omitempty"`
}

// MetricGate is a metric gate as the plan shows it: the query, the
// threshold every value must hold, and its timing with defaults applied.
// It is not api/v1beta1's MetricGate, which keeps what the person wrote:
// there unset fields are omitted (interval, timeout, successesRequired,
// a failureLimit of 0) and the threshold is an {operator, value} object,
// while a plan shows every field as the gate will run ("failureLimit: 0",
// "interval: 1m0s") and the threshold as the evidence's one string
// ("< 0.05", as the request's status.metricGate records it).
type MetricGate struct {
	Query             string          `json:"query"`
	Threshold         string          `json:"threshold"`
	SuccessesRequired int32           `json:"successesRequired"`
	FailureLimit      int32           `json:"failureLimit"`
	Interval          metav1.Duration `json:"interval"`
	Timeout           metav1.Duration `json:"timeout"`
	PrometheusURL     string          `json:"prometheusURL,omitempty"`
}

// GateWindow is the Type of a stage's RolloutWindow in its Before gates:
// its clusters start only while the window is open, so the stage's Start
// is when it opens (the timeline says "waiting for window …").
const GateWindow = "Window"

// Event is one step of a run, at a virtual offset from the merge.
type Event struct {
	At      metav1.Duration `json:"at"`
	Message string          `json:"message"`
}

// ManifestError is a manifest at Head that does not render.
type ManifestError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Compute plans the merge of opts.Head into opts.Base.
func Compute(ctx context.Context, opts Options) (*Plan, error) {
	if opts.Head == "" {
		opts.Head = "HEAD"
	}
	if opts.Status == "" {
		opts.Status = opts.Base
	}
	if opts.Base == "" {
		return nil, fmt.Errorf("no base revision: pass --base (the branch gitfleet tracks, e.g. origin/main)")
	}
	base, err := resolve(ctx, opts.Repo, opts.Base)
	if err != nil {
		return nil, err
	}
	head, err := resolve(ctx, opts.Repo, opts.Head)
	if err != nil {
		return nil, err
	}
	statusAt, err := resolve(ctx, opts.Repo, opts.Status)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gitfleet-plan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m, err := prepareMerge(ctx, opts.Repo, dir, base, head)
	if err != nil {
		return nil, err
	}

	from := statusAt
	if _, err := git(ctx, m.repo, nil, "cat-file", "-e", statusAt+":"+status.StatusDir); err != nil {
		from = simulate.FromScratch // serve never wrote there: an empty hub
	}
	var start state
	res, err := simulate.Run(ctx, simulate.Options{
		Repo: m.repo, Branch: mergeBranch, Path: opts.Path, FromStatus: from,
		Approve: true, KeepPending: true, ApprovedBy: "assumed at once", Until: opts.Until, Start: opts.At, StuckThreshold: opts.StuckThreshold, Log: opts.Log,
		Limits: opts.Limits, MaxFileSize: opts.MaxFileSize, MaxTotalSize: opts.MaxTotalSize,
		Prepared: func(ctx context.Context, h *embedded.Hub) error {
			var err error
			start, err = capture(ctx, h)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	p := &Plan{Base: base, Head: head, Status: res.StatusCommit.String(), HeadSubject: m.headSubject,
		Refused: res.Rejected, Elapsed: metav1.Duration{Duration: res.Elapsed}}
	if res.StatusCommit.IsZero() {
		p.Status = ""
	}
	p.HeadRefused = res.TipRefused
	if n := len(res.Unrendered); p.HeadRefused && len(res.ManifestErrors) == 0 && n > 0 {
		p.HeadError = res.Unrendered[n-1].Err.Error()
	}
	for _, e := range res.ManifestErrors {
		me := ManifestError{File: e.File, Line: e.Line}
		// The file and line have their own fields.
		me.Message = strings.TrimPrefix(e.Error(), me.Position()+": ")
		p.ManifestErrors = append(p.ManifestErrors, me)
	}
	if p.Snapshots, err = snapshots(ctx, res, start, m); err != nil {
		return nil, err
	}
	if p.Runs, err = runs(ctx, res, start); err != nil {
		return nil, err
	}
	if p.Deletions, err = deletions(ctx, res.Hub, start, p.Snapshots, p.Runs); err != nil {
		return nil, err
	}
	return p, nil
}

// state is what the hub held when the engine started: the recorded state
// with the merge's snapshots and fleet objects.
type state struct {
	runs map[string]*fleet.UpdateRun
	// clusters is, by placement, each bound cluster's snapshot index.
	clusters map[hub.Key][]ClusterIndex
}

func capture(ctx context.Context, h *embedded.Hub) (state, error) {
	s := state{runs: map[string]*fleet.UpdateRun{}, clusters: map[hub.Key][]ClusterIndex{}}
	runs, err := h.ListUpdateRuns(ctx)
	if err != nil {
		return s, err
	}
	for _, r := range runs {
		s.runs[runName(r)] = r.DeepCopy()
	}
	placements, err := h.ListPlacements(ctx)
	if err != nil {
		return s, err
	}
	for _, pl := range placements {
		key := hub.Key{Namespace: pl.Namespace, Name: pl.Name}
		snaps, err := h.ListResourceSnapshots(ctx, key)
		if err != nil {
			return s, err
		}
		groups := resourcesnapshot.Of(snaps)
		bindings, err := h.ListBindings(ctx, key)
		if err != nil {
			return s, err
		}
		for _, b := range bindings {
			index := ""
			if g, ok := groups.Named(b.Spec.ResourceSnapshotName); ok {
				index = strconv.Itoa(g.Index)
			}
			s.clusters[key] = append(s.clusters[key], ClusterIndex{Cluster: b.Spec.TargetCluster, Index: index})
		}
		sort.Slice(s.clusters[key], func(i, j int) bool { return s.clusters[key][i].Cluster < s.clusters[key][j].Cluster })
	}
	return s, nil
}

func runName(r *fleet.UpdateRun) string {
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}

func placementName(k hub.Key) string {
	if k.Namespace != "" {
		return k.Namespace + "/" + k.Name
	}
	return k.Name
}

// snapshots describes the resource snapshots the merge recorded.
func snapshots(ctx context.Context, res *simulate.Result, start state, m *merge) ([]Snapshot, error) {
	var out []Snapshot
	for _, s := range res.Recorded {
		idx, ok := resourcesnapshot.Index(s)
		if !ok || !resourcesnapshot.IsMaster(s) || s.Annotations[fleet.CommitAnnotation] == "" {
			continue // a sub-snapshot (its master describes the group), or one no commit recorded
		}
		key := hub.Key{Namespace: s.Namespace, Name: s.Labels[fleet.PlacementTrackingLabel]}
		commit := s.Annotations[fleet.CommitAnnotation]
		if commit == m.tip {
			commit = m.head
		}
		sn := Snapshot{Placement: placementName(key), Index: strconv.Itoa(idx), Commit: commit, Clusters: start.clusters[key]}
		all, err := res.Hub.ListResourceSnapshots(ctx, key)
		if err != nil {
			return nil, err
		}
		groups := resourcesnapshot.Of(all)
		if prev, ok := groups.Before(idx); ok {
			sn.Previous = strconv.Itoa(prev.Index)
		}
		if sn.Changes, err = changes(groups, sn.Previous, sn.Index); err != nil {
			return nil, err
		}
		out = append(out, sn)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Placement != out[j].Placement {
			return out[i].Placement < out[j].Placement
		}
		a, _ := strconv.Atoi(out[i].Index)
		b, _ := strconv.Atoi(out[j].Index)
		return a < b
	})
	return out, nil
}

// changes lists what differs between two snapshot groups' resources, as
// "Kind namespace/name" sorted by that name, the change capitalized.
func changes(groups resourcesnapshot.Groups, before, after string) ([]ResourceChange, error) {
	var have map[resourcesnapshot.Resource][]byte
	if before != "" {
		g, _ := groups.Find(before)
		var err error
		if have, err = g.Resources(); err != nil {
			return nil, err
		}
	}
	g, _ := groups.Find(after)
	want, err := g.Resources()
	if err != nil {
		return nil, err
	}
	var out []ResourceChange
	for _, c := range resourcesnapshot.Diff(have, want) {
		name := c.Name
		if c.Namespace != "" {
			name = c.Namespace + "/" + name
		}
		out = append(out, ResourceChange{Change: strings.ToUpper(c.Change[:1]) + c.Change[1:], Resource: c.Kind + " " + name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out, nil
}

// runs describes the runs the preview moved: new ones, and restored ones
// whose status changed.
func runs(ctx context.Context, res *simulate.Result, start state) ([]Run, error) {
	final, err := res.Hub.ListUpdateRuns(ctx)
	if err != nil {
		return nil, err
	}
	events := map[string][]Event{}
	for _, e := range res.Timeline {
		events[e.Run] = append(events[e.Run], Event{At: metav1.Duration{Duration: e.At}, Message: e.Message})
	}
	var out []Run
	for _, r := range final {
		name := runName(r)
		before := start.runs[name]
		if before != nil && equality.Semantic.DeepEqual(before.Status, r.Status) && len(events[name]) == 0 {
			continue
		}
		run := Run{
			Name: name, Placement: r.Spec.PlacementName, Strategy: r.Spec.StagedUpdateStrategyName,
			Snapshot: r.Status.ResourceSnapshotIndexUsed, After: r.Phase(), Detail: simulate.Detail(r),
			Timeline: events[name],
		}
		run.New = before == nil || len(before.Status.Conditions) == 0
		run.Before = "New"
		if !run.New {
			run.Before = before.Phase()
		}
		run.Stages = stages(r, res.Start)
		clusterSet(r, &run)
		if d := r.Status.DeletionStageStatus; d != nil {
			for _, c := range d.Clusters {
				run.Deleting = append(run.Deleting, c.ClusterName)
			}
		}
		out = append(out, run)
	}
	return out, nil
}

// stages reads a run's stage plan, gates and times from its status.
func stages(r *fleet.UpdateRun, t0 time.Time) []Stage {
	var specs []fleet.StageConfig
	if s := r.Status.StagedUpdateStrategySnapshot; s != nil {
		specs = s.Stages
	}
	var out []Stage
	for i, st := range r.Status.StagesStatus {
		s := Stage{Name: st.StageName, Start: offset(st.StartTime, t0), End: offset(st.EndTime, t0)}
		for _, c := range st.Clusters {
			s.Clusters = append(s.Clusters, c.ClusterName)
		}
		var spec *fleet.StageConfig
		if i < len(specs) {
			spec = &specs[i]
		}
		if spec != nil {
			for _, w := range spec.Windows {
				s.Before = append(s.Before, Gate{Type: GateWindow, Window: w})
			}
			s.Before = append(s.Before, gates(spec.BeforeStageTasks, st.BeforeStageTaskStatus)...)
			s.After = gates(spec.AfterStageTasks, st.AfterStageTaskStatus)
		}
		s.FailureBudget = failureBudget(r, spec, &st)
		out = append(out, s)
	}
	return out
}

func gates(tasks []fleet.StageTask, status []fleet.StageTaskStatus) []Gate {
	var out []Gate
	for i, t := range tasks {
		g := Gate{Type: string(t.Type)}
		if t.WaitTime != nil {
			g.Wait = &metav1.Duration{Duration: t.WaitTime.Duration}
		}
		if t.Metric != nil {
			g.Metric = newMetricGate(t.Metric)
		}
		if i < len(status) {
			g.ApprovalRequest = status[i].ApprovalRequestName
		}
		out = append(out, g)
	}
	return out
}

// newMetricGate is the gate m as it will run, its defaults applied.
func newMetricGate(m *fleet.MetricGate) *MetricGate {
	return &MetricGate{Query: m.Query, Threshold: m.Threshold.String(), SuccessesRequired: m.SuccessesOrDefault(),
		FailureLimit: m.FailureLimit, Interval: metav1.Duration{Duration: m.IntervalOrDefault()},
		Timeout: metav1.Duration{Duration: m.TimeoutOrDefault()}, PrometheusURL: m.PrometheusURL}
}

func offset(t *metav1.Time, t0 time.Time) *metav1.Duration {
	if t == nil {
		return nil
	}
	d := t.Sub(t0)
	if d < 0 {
		return nil
	}
	return &metav1.Duration{Duration: d.Round(time.Second)}
}
