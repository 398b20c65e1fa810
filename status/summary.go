package status

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// MessagePrefix starts the message of every status commit: it tells
// gitfleet's writes of the status tree from the other commits it makes (the
// approval branches').
const MessagePrefix = "status: "

// Summarize writes the commit message for a changeset: a subject saying what
// happened, so `git log` of the status branch reads as the rollout's history.
//
// objects holds the written objects by path (files being deleted need none);
// before holds what each written path held until now (nil: a new file).
// One run changed: the subject tells its progress ("status: example-run
// stage canary waiting for approval"), and a body counts the other files.
// Otherwise the subject counts files by family ("status: 3 bindings, 1 run
// updated") and the body has one line per run. A change Git asked for and
// gitfleet refused (the rejected-change annotation) is named: alone, it is
// the subject ("status: run-v2 change refused: placementName is
// immutable"), since a progress the run already had would hide it. A new
// resource snapshot that removes resources (the removed-resources
// annotation) leads the subject ("status: example-placement snapshot 1
// removes 1 resource; 1 snapshot updated"): the next run deletes them.
func Summarize(changes Changeset, objects map[string]runtime.Object, before map[string][]byte) string {
	var runs []*fleet.UpdateRun
	progressOf := map[*fleet.UpdateRun]string{}
	// quiet are the runs written whose progress reads as before; events
	// are runs removed and snapshots recorded, which lead the subject.
	var notes, refusals, alsoRefused, removals, quiet, events []string
	updated, removed, moved := map[string]int{}, map[string]int{}, map[string]int{}
	// A binding that changes folders (stageLayout) is a deletion and a
	// write of the same object: it moved.
	movedFrom := map[string]string{} // by the path PathFor gives
	for _, p := range changes.Deletes {
		if familyOf(p) == familyBinding {
			movedFrom[unstaged(p)] = p
		}
	}
	gone := map[string]bool{}
	for _, p := range changes.WritePaths() {
		fam := familyOf(p)
		if from, ok := movedFrom[unstaged(p)]; ok && fam == familyBinding && from != p {
			moved[fam]++
			gone[from] = true
			continue
		}
		if r, only := refusal(fam, objects[p], before[p]); only {
			// Nothing but the note changed: the refusal is the news.
			refusals = append(refusals, r)
			continue
		} else if r != "" {
			alsoRefused = append(alsoRefused, r)
		}
		switch o := objects[p].(type) {
		case *fleet.UpdateRun:
			if progress, news := runChange(o, before[p]); news {
				runs = append(runs, o)
				progressOf[o] = progress
			} else {
				// Its progress reads as before: not the news.
				updated[fam]++
				quiet = append(quiet, runName(o)+": "+progress)
			}
			continue
		case *fleet.Commit:
			notes = append(notes, "commit "+shortHash(o.Name)+" did not render; it is skipped")
			continue
		case *fleet.GitSource:
			notes = append(notes, sourceChange(o, before[p]))
			continue
		case *fleet.ResourceSnapshot:
			if r := removal(o); r != "" && before[p] == nil {
				removals = append(removals, r)
			} else if r := recorded(o); r != "" && before[p] == nil {
				events = append(events, r)
			}
		}
		updated[fam]++
	}
	for _, p := range changes.Deletes {
		if gone[p] {
			continue
		}
		fam := familyOf(p)
		removed[fam]++
		if ref, err := RefFor(p); err == nil && fam == familyRun {
			name := ref.Name
			if ref.Namespace != "" {
				name = ref.Namespace + "/" + name
			}
			if !slices.Contains(events, name+" removed") {
				events = append(events, name+" removed")
			}
		}
	}

	var subject string
	var body []string
	switch {
	case len(runs) == 0 && len(refusals) > 0:
		subject, body = refusals[0], refusals[1:]
		if rest := counts(updated, removed, moved); rest != "" {
			body = append(body, "Also: "+rest+".")
		}
	case len(runs) == 1 && len(quiet) == 0:
		subject = runName(runs[0]) + " " + progressOf[runs[0]]
		if rest := counts(updated, removed, moved); rest != "" {
			body = append(body, "Also: "+rest+".")
		}
		body = append(body, refusals...)
	default:
		updated[familyRun] += len(runs)
		for _, r := range runs {
			body = append(body, runName(r)+": "+progressOf[r])
		}
		body = append(body, quiet...)
		subject = counts(updated, removed, moved)
		if subject == "" {
			subject = "no changes"
		}
		body = append(body, refusals...)
	}
	body = append(body, alsoRefused...)
	if len(notes) > 0 {
		if subject == "no changes" {
			subject, notes = notes[0], notes[1:]
		}
		body = append(body, notes...)
	}
	if len(events) > 0 && len(runs) != 1 {
		// Runs removed and snapshots recorded lead counts, not a run's
		// own news.
		lead := strings.Join(events, "; ")
		if subject == "no changes" {
			subject = lead
		} else {
			subject = lead + "; " + subject
		}
	}
	if len(removals) > 0 {
		// The deletions lead: a run rolling the snapshot out makes them.
		if subject == "no changes" {
			subject = removals[0]
		} else {
			subject = removals[0] + "; " + subject
		}
		body = append(removals[1:], body...)
	}
	msg := MessagePrefix + subject
	if len(body) > 0 {
		msg += "\n\n" + strings.Join(body, "\n")
	}
	return msg
}

// runChange says how a written run moved since old (its file's previous
// content): its progress, or the spec.state a person changed ("spec.state
// Run → Stop") when that is all a reader would see; news is false when
// the run reads as it did.
func runChange(r *fleet.UpdateRun, old []byte) (progress string, news bool) {
	progress = RunProgress(r)
	if old == nil {
		return progress, true
	}
	o, err := Decode(old)
	was, ok := o.(*fleet.UpdateRun)
	if err != nil || !ok {
		return progress, true
	}
	if was.Spec.State != r.Spec.State {
		state := fmt.Sprintf("spec.state %s → %s", runState(was), runState(r))
		if RunProgress(was) == progress {
			return state, true
		}
		return progress + " (" + state + ")", true
	}
	return progress, RunProgress(was) != progress
}

// ApprovalsMessage is the message of the commit that carries a pass's
// approvals/ to the tracked branch while status/ goes to statusBranch
// (serve --status-branch): its subject names the approval requests it
// writes or removes, not a run's progress it does not record; the body
// points at the status commit of the same pass (statusMessage).
func ApprovalsMessage(approvals Changeset, statusMessage, statusBranch string) string {
	var written, removed []string
	for _, p := range approvals.WritePaths() {
		written = append(written, requestName(p))
	}
	for _, p := range approvals.Deletes {
		removed = append(removed, requestName(p))
	}
	var parts []string
	if len(written) > 0 {
		parts = append(parts, requests(written)+" updated")
	}
	if len(removed) > 0 {
		parts = append(parts, requests(removed)+" removed")
	}
	msg := MessagePrefix + strings.Join(parts, "; ")
	if subject, _, _ := strings.Cut(strings.TrimPrefix(statusMessage, MessagePrefix), "\n"); subject != "" {
		msg += "\n\nThe status of the same pass, on branch " + statusBranch + ": " + subject
	}
	return msg
}

// requestName is the namespace/name of the approval request at path p.
func requestName(p string) string {
	ref, err := RefFor(p)
	if err != nil {
		return p
	}
	if ref.Namespace != "" {
		return ref.Namespace + "/" + ref.Name
	}
	return ref.Name
}

// requests names approval requests: all of up to three, else a count.
func requests(names []string) string {
	switch {
	case len(names) == 1:
		return "approval request " + names[0]
	case len(names) <= 3:
		return "approval requests " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%d approval requests", len(names))
}

// sourceChange says how a source record moved since old: its progress,
// or, when that reads as before, what else changed (a fetched commit, an
// error's text), so two commits in a row never read the same.
func sourceChange(src *fleet.GitSource, old []byte) string {
	progress := SourceProgress(src)
	o, err := Decode(old)
	was, ok := o.(*fleet.GitSource)
	if old == nil || err != nil || !ok || SourceProgress(was) != progress {
		return progress
	}
	switch {
	case was.Status.LastFetchedCommit != src.Status.LastFetchedCommit && src.Status.LastFetchedCommit != "":
		return progress + ", fetched " + shortHash(src.Status.LastFetchedCommit)
	case was.Status.LastError != src.Status.LastError:
		return progress + " (its error changed)"
	}
	return progress + " (record updated)"
}

// runState is spec.state; absent, the API default Initialize.
func runState(r *fleet.UpdateRun) fleet.State {
	if r.Spec.State == "" {
		return fleet.StateInitialize
	}
	return r.Spec.State
}

// recorded names a new latest resource snapshot ("example-placement
// snapshot 5 recorded"), or "" for another snapshot file.
func recorded(s *fleet.ResourceSnapshot) string {
	if s.Labels[fleet.IsLatestSnapshotLabel] != "true" {
		return ""
	}
	placement := s.Labels[fleet.PlacementTrackingLabel]
	if s.Namespace != "" {
		placement = s.Namespace + "/" + placement
	}
	return fmt.Sprintf("%s snapshot %s recorded", placement, s.Labels[fleet.ResourceIndexLabel])
}

// removal says what a new latest resource snapshot removes ("team-a/web
// snapshot 3 removes 2 resources"), or "" when it removes nothing.
func removal(s *fleet.ResourceSnapshot) string {
	n, err := strconv.Atoi(s.Annotations[fleet.RemovedResourcesAnnotation])
	if err != nil || n <= 0 || s.Labels[fleet.IsLatestSnapshotLabel] != "true" {
		return ""
	}
	placement := s.Labels[fleet.PlacementTrackingLabel]
	if s.Namespace != "" {
		placement = s.Namespace + "/" + placement
	}
	noun := "resource"
	if n != 1 {
		noun = "resources"
	}
	return fmt.Sprintf("%s snapshot %s removes %d %s", placement, s.Labels[fleet.ResourceIndexLabel], n, noun)
}

// refusal names a change refused on obj ("run-v2 change refused:
// placementName is immutable") when its rejected-change annotation is new
// since old (the file's previous content); only reports whether that
// annotation is all that changed.
func refusal(family string, obj runtime.Object, old []byte) (note string, only bool) {
	o, ok := obj.(metav1.Object)
	if !ok || o.GetAnnotations()[fleet.RejectedChangeAnnotation] == "" {
		return "", false
	}
	var prev metav1.Object
	if old != nil {
		if p, err := Decode(old); err == nil {
			prev, _ = p.(metav1.Object)
		}
	}
	why := o.GetAnnotations()[fleet.RejectedChangeAnnotation]
	if prev != nil && prev.GetAnnotations()[fleet.RejectedChangeAnnotation] == why {
		return "", false
	}
	name := o.GetName()
	if o.GetNamespace() != "" {
		name = o.GetNamespace() + "/" + name
	}
	if family != familyRun {
		name = family + " " + name
	}
	return name + " change refused: " + refusalReason(why), prev != nil && sameBut(obj, prev.(runtime.Object), fleet.RejectedChangeAnnotation)
}

// sameBut reports whether a and b differ in nothing but annotation key, as
// the status tree writes them.
func sameBut(a, b runtime.Object, key string) bool {
	encode := func(o runtime.Object) []byte {
		c := o.DeepCopyObject()
		m := c.(metav1.Object)
		ann := maps.Clone(m.GetAnnotations())
		delete(ann, key)
		if len(ann) == 0 {
			ann = nil
		}
		m.SetAnnotations(ann)
		data, err := Encode(c)
		if err != nil {
			return nil
		}
		return data
	}
	ea, eb := encode(a), encode(b)
	return ea != nil && bytes.Equal(ea, eb)
}

// refusalReason shortens the rejected-change note that gitops writes ("the
// change to ClusterStagedUpdateRun run-v2 in run.yaml was rejected:
// spec.placementName: Invalid value: \"p2\": placementName is immutable;
// the last accepted spec is still in use") to its reason ("placementName is
// immutable"), or for a file that no longer renders to "run.yaml no longer
// renders". A note of another shape is kept whole.
// unquotedValue says whether s is a value as field.Error prints one
// without quotes (a number, true, null, a struct): the CEL rules of the
// CRDs omit the value, so "Invalid value: " may be followed by the detail.
func unquotedValue(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	switch s {
	case "true", "false", "null", "<error>":
		return true
	}
	return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") || strings.HasPrefix(s, "&")
}

func refusalReason(note string) string {
	note = strings.TrimSuffix(note, "; the last accepted spec is still in use")
	if rest, ok := strings.CutPrefix(note, "the manifest no longer renders ("); ok {
		file, _, _ := strings.Cut(rest, ":")
		return file + " no longer renders"
	}
	_, why, ok := strings.Cut(note, " was rejected: ")
	if !ok {
		return note
	}
	// why is a field.ErrorList: "<field>: <type>[: <value>]: <detail>";
	// keep the detail of the first error.
	why, several := strings.CutPrefix(why, "[")
	_, body, ok := strings.Cut(why, ": ")
	if !ok {
		return why
	}
	if rest, ok := strings.CutPrefix(body, field.ErrorTypeInvalid.String()+": "); ok {
		if v, err := strconv.QuotedPrefix(rest); err == nil {
			rest = rest[len(v):]
		} else if i := strings.Index(rest, ": "); i >= 0 && unquotedValue(rest[:i]) {
			rest = rest[i:]
		}
		body = strings.TrimPrefix(rest, ": ")
	} else {
		for _, t := range []field.ErrorType{field.ErrorTypeForbidden, field.ErrorTypeRequired, field.ErrorTypeNotSupported,
			field.ErrorTypeDuplicate, field.ErrorTypeInternal} {
			if rest, ok := strings.CutPrefix(body, t.String()+": "); ok {
				body = rest
				break
			}
		}
	}
	if several {
		body, _, _ = strings.Cut(body, ", ")
	}
	return body
}

// Families of files, in the order they are listed when counts tie.
const (
	familyRun            = "run"
	familyApproval       = "approval request"
	familyPlacement      = "placement"
	familySnapshot       = "snapshot"
	familyPolicySnapshot = "policy snapshot"
	familyBinding        = "binding"
	familyCluster        = "cluster"
	familyStrategy       = "strategy"
	familyOther          = "file"
)

var familyOrder = []string{familyRun, familyApproval, familyPlacement, familySnapshot, familyPolicySnapshot,
	familyBinding, familyCluster, familyStrategy, familyOther}

var familyPlural = map[string]string{familyStrategy: "strategies"}

func familyOf(p string) string {
	ref, err := RefFor(p)
	if err != nil {
		return familyOther
	}
	switch ref.Kind {
	case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
		return familyRun
	case fleet.KindClusterApprovalRequest, fleet.KindApprovalRequest:
		return familyApproval
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		return familyPlacement
	case fleet.KindClusterResourceSnapshot, fleet.KindResourceSnapshot:
		return familySnapshot
	case fleet.KindClusterSchedulingPolicySnapshot, fleet.KindSchedulingPolicySnapshot:
		return familyPolicySnapshot
	case fleet.KindClusterResourceBinding, fleet.KindResourceBinding:
		return familyBinding
	case fleet.KindMemberCluster:
		return familyCluster
	case fleet.KindClusterStagedUpdateStrategy, fleet.KindStagedUpdateStrategy:
		return familyStrategy
	}
	return familyOther
}

// counts renders "3 bindings, 1 run updated; 2 snapshots removed": largest
// count first, ties in family order.
func counts(updated, removed, moved map[string]int) string {
	var parts []string
	if s := countList(updated); s != "" {
		parts = append(parts, s+" updated")
	}
	if s := countList(moved); s != "" {
		parts = append(parts, s+" moved")
	}
	if s := countList(removed); s != "" {
		parts = append(parts, s+" removed")
	}
	return strings.Join(parts, "; ")
}

func countList(n map[string]int) string {
	fams := make([]string, 0, len(n))
	for _, f := range familyOrder {
		if n[f] > 0 {
			fams = append(fams, f)
		}
	}
	sort.SliceStable(fams, func(i, j int) bool { return n[fams[i]] > n[fams[j]] })
	out := make([]string, len(fams))
	for i, f := range fams {
		noun := f
		if n[f] != 1 {
			noun = f + "s"
			if p, ok := familyPlural[f]; ok {
				noun = p
			}
		}
		out[i] = fmt.Sprintf("%d %s", n[f], noun)
	}
	return strings.Join(out, ", ")
}

func runName(r *fleet.UpdateRun) string {
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}

// RunProgress says in a few words where a run stands (runview's reading):
// "succeeded", "stage canary waiting for approval", "stage prod updating
// member1, member3", "stuck in stage prod", "stopped", ...
func RunProgress(r *fleet.UpdateRun) string {
	v := runview.Of(r)
	s := v.Stage()
	switch v.Phase {
	case fleet.PhaseSucceeded:
		return "succeeded"
	case fleet.PhaseFailed:
		if s != nil && s.State == runview.StageFailed {
			return "failed in " + s.Label()
		}
		return "failed"
	case fleet.PhaseInitFailed:
		return "failed to initialize"
	case fleet.PhaseInitializing:
		return "created"
	case fleet.PhaseInitialized:
		return "initialized"
	case fleet.PhaseStopping:
		return "stopping"
	case fleet.PhaseStopped:
		return "stopped"
	}
	if s == nil || s.State == runview.StagePending {
		// Between two stages: the next one has not started.
		return strings.ToLower(v.Phase)
	}
	switch v.Phase {
	case fleet.PhaseWaiting:
		if v.Waiting.For == runview.WaitApproval {
			return s.Label() + " waiting for approval"
		}
		return s.Label() + " waiting"
	case fleet.PhaseStuck:
		return "stuck in " + s.Label()
	}
	if len(s.InFlight) == 0 {
		return s.Label() + " progressing"
	}
	verb := " updating "
	if s.Deletion {
		verb = " deleting "
	}
	return s.Label() + verb + strings.Join(s.InFlight, ", ")
}

// shortHash is the 12-character form of a commit hash, as gitfleet logs it.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
