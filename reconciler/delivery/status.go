package delivery

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Reasons and messages of KubeFleet's work generator for bindings whose
// Works were just written or report back (pkg/utils/condition).
const (
	// WorkApplyInProgressMessage goes with fleet.ApplyInProgressReason:
	// the Works changed; their member has not applied them yet.
	WorkApplyInProgressMessage = "Resources are being applied"
	// WorkDiffReportInProgressMessage: the same under ReportDiff
	// (fleet.DiffReportInProgressReason).
	WorkDiffReportInProgressMessage = "Diff reporting on resources is in progress"
	// WorkNotTrackableReason is a Work's Available reason when some of its
	// manifests' availability cannot be tracked, and
	// WorkNotAvailabilityTrackableReason the binding's then.
	WorkNotTrackableReason             = "WorkNotTrackable"
	WorkNotAllManifestsTrackableReason = "SomeManifestsAreNotAvailabilityTrackable"
	WorkNotAvailabilityTrackableReason = "NotAllWorkAreAvailabilityTrackable"
	// WorkAppliedFailedReason is a Work's Applied reason when its apply
	// failed as a whole, no manifest naming the failure (a CRD of the
	// Work never became established); the message is the cause
	// (KubeFleet's pkg/utils/condition WorkAppliedFailedReason).
	WorkAppliedFailedReason = "WorkAppliedFailed"
)

// InProgress is what b reports right after its Works changed: Overridden
// and WorkSynchronized, and Applied=False (DiffReported=False under
// ReportDiff) until the member reports on the new Works.
func InProgress(b *fleet.Binding) []metav1.Condition {
	gen := b.Generation
	last := metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse,
		Reason: fleet.ApplyInProgressReason, Message: WorkApplyInProgressMessage, ObservedGeneration: gen}
	if reportsDiff(b) {
		last = metav1.Condition{Type: fleet.ResourceBindingDiffReported, Status: metav1.ConditionFalse,
			Reason: fleet.DiffReportInProgressReason, Message: WorkDiffReportInProgressMessage, ObservedGeneration: gen}
	}
	return []metav1.Condition{member.Overridden(b), member.WorkSynchronized(gen), last}
}

// summary is the state of one condition type over a binding's Works.
type summary int

const (
	incomplete summary = iota // some Work has not reported on its generation
	succeeded                 // every Work reports True
	failedSome                // every Work reported, some False
)

// Status is b's delivery conditions and failed, drifted and diffed
// placements from the status its member reported on its Works, as
// KubeFleet's work generator sets them (setBindingStatus): Applied and
// Available, or DiffReported under ReportDiff, each True only when every
// Work says so at its generation; the placements only once every Work
// finished what the strategy asks, so stale ones never leak into a new
// report. Works being deleted are not counted. Unlike KubeFleet's, a Work
// whose manifests are only not available yet makes Available=False
// ResourceNotAvailableYet, which the engine waits for (summarize); a Work
// that failed to apply as a whole (WorkAppliedFailed, no manifest naming
// the failure) adds its cause to the binding's Applied message; and the
// Works' PruneSkipped (gitfleet's) makes the binding's, after Applied, as
// the push transport reports it.
func Status(b *fleet.Binding, works []*fleet.Work) ([]metav1.Condition, member.Placements) {
	gen := b.Generation
	live := make([]*fleet.Work, 0, len(works))
	for _, w := range works {
		if w.DeletionTimestamp == nil {
			live = append(live, w)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
	conds := []metav1.Condition{member.Overridden(b), member.WorkSynchronized(gen)}
	var p member.Placements
	if reportsDiff(b) {
		c, s := summarize(live, fleet.WorkConditionTypeDiffReported, gen, diffReportedWords)
		conds = append(conds, c)
		if s == succeeded {
			for _, w := range live {
				p.Diffed = append(p.Diffed, diffedOf(w)...)
			}
		}
		return conds, p
	}
	applied, appliedState := summarize(live, fleet.WorkConditionTypeApplied, gen, appliedWords)
	conds = append(conds, applied)
	if c, ok := pruneSkipped(live, gen); ok {
		conds = append(conds, c)
	}
	availableState := failedSome
	if appliedState == succeeded {
		var available metav1.Condition
		available, availableState = summarize(live, fleet.WorkConditionTypeAvailable, gen, availableWords)
		conds = append(conds, available)
	}
	for _, w := range live {
		switch {
		case appliedState == incomplete:
		case appliedState == failedSome:
			p.Failed = append(p.Failed, failedOf(w)...)
			p.Diffed = append(p.Diffed, diffedOf(w)...)
			p.Drifted = append(p.Drifted, driftedOf(w)...)
		case availableState == failedSome:
			p.Failed = append(p.Failed, failedOf(w)...)
			p.Drifted = append(p.Drifted, driftedOf(w)...)
		default:
			p.Drifted = append(p.Drifted, driftedOf(w)...)
		}
	}
	return conds, p
}

func reportsDiff(b *fleet.Binding) bool {
	return b.Spec.ApplyStrategy != nil && b.Spec.ApplyStrategy.Type == fleet.ApplyStrategyTypeReportDiff
}

// words are KubeFleet's reasons and messages for one binding condition.
type words struct {
	condType                 string
	trueReason, trueMessage  string
	falseReason              string
	incompleteFmt, failedFmt string
	// untrackableFmt, for Available only, is the message of True when a
	// Work's availability cannot be tracked
	// (setAllWorkAvailableCondition).
	untrackableFmt string
}

var (
	appliedWords = words{condType: fleet.ResourceBindingApplied,
		trueReason: member.AllWorkAppliedReason, trueMessage: member.AllWorkAppliedMessage,
		falseReason:   member.WorkNotAppliedReason,
		incompleteFmt: "Work object %s has not yet completed the apply op", failedFmt: member.WorkFailedToApplyMessageFmt}
	availableWords = words{condType: fleet.ResourceBindingAvailable,
		trueReason: member.AllWorkAvailableReason, trueMessage: member.AllWorkAvailableMessage,
		falseReason:   member.WorkNotAvailableReason,
		incompleteFmt: "Work object %s has not yet completed availability check", failedFmt: member.WorkNotAvailableMessageFmt,
		untrackableFmt: "The availability of work object %s is not trackable"}
	diffReportedWords = words{condType: fleet.ResourceBindingDiffReported,
		trueReason: member.AllWorkDiffReportedReason, trueMessage: member.AllWorkDiffReportedMessage,
		falseReason:   member.WorkNotDiffReportedReason,
		incompleteFmt: "Work object %s has not yet completed diff reporting", failedFmt: member.WorkDiffReportFailedMessageFmt}
)

// summarize is one condition type over the Works (t, in w's words): True
// when every Work reports it True at its generation, else False naming
// the first Work that has not reported or reported False. For Available,
// a Work whose availability cannot be tracked makes it True with
// NotAllWorkAreAvailabilityTrackable naming that Work, and Works whose
// manifests are only not available yet make it False with the in-progress
// reason ResourceNotAvailableYet (KubeFleet's NotAllWorkAreAvailable is
// kept for a manifest that failed its availability check).
func summarize(works []*fleet.Work, t string, gen int64, w words) (metav1.Condition, summary) {
	var notDone, failed, waiting, untrackable *fleet.Work
	for _, work := range works {
		c := meta.FindStatusCondition(work.Status.Conditions, t)
		switch {
		case isTrue(c, work.Generation) && w.untrackableFmt != "" &&
			(c.Reason == WorkNotTrackableReason || c.Reason == WorkNotAllManifestsTrackableReason):
			if untrackable == nil {
				untrackable = work
			}
		case isTrue(c, work.Generation):
		case isFalse(c, work.Generation) && t == fleet.WorkConditionTypeAvailable && notYetAvailable(work):
			if waiting == nil {
				waiting = work
			}
		case isFalse(c, work.Generation):
			if failed == nil {
				failed = work
			}
		default:
			if notDone == nil {
				notDone = work
			}
		}
	}
	cond := func(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: w.condType, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	switch {
	case notDone != nil:
		return cond(metav1.ConditionFalse, w.falseReason, fmt.Sprintf(w.incompleteFmt, notDone.Name)), incomplete
	case failed != nil:
		msg := fmt.Sprintf(w.failedFmt, failed.Name)
		if cause := workLevelCause(failed, t); cause != "" {
			// gitfleet's (README, deliberate differences): a pushed
			// member's Works are not on the hub to read the cause from.
			msg += ": " + cause
		}
		return cond(metav1.ConditionFalse, w.falseReason, msg), failedSome
	case waiting != nil:
		// gitfleet's in-progress reason (README, deliberate differences):
		// the engine waits for it instead of counting a failure.
		return cond(metav1.ConditionFalse, fleet.ResourceNotAvailableYetReason, fmt.Sprintf(w.failedFmt, waiting.Name)), failedSome
	case untrackable != nil:
		return cond(metav1.ConditionTrue, WorkNotAvailabilityTrackableReason, fmt.Sprintf(w.untrackableFmt, untrackable.Name)), succeeded
	}
	return cond(metav1.ConditionTrue, w.trueReason, w.trueMessage), succeeded
}

// workLevelCause is why w failed as a whole (t is Applied, reason
// WorkAppliedFailed at w's generation), capped (condmsg), "" when a manifest of w names the
// failure: then KubeFleet's message stays exact, and the manifest's
// failure is in failedPlacements.
func workLevelCause(w *fleet.Work, t string) string {
	c := meta.FindStatusCondition(w.Status.Conditions, t)
	if t != fleet.WorkConditionTypeApplied || !isFalse(c, w.Generation) || c.Reason != WorkAppliedFailedReason {
		return ""
	}
	for _, mc := range w.Status.ManifestConditions {
		if m := meta.FindStatusCondition(mc.Conditions, t); m != nil && m.Status == metav1.ConditionFalse {
			return ""
		}
	}
	return condmsg.Cap(c.Message) // a Work written by another agent may carry up to 32 KiB
}

// notYetAvailable reports whether w is not available only because some of
// its manifests are not available yet (the work applier's
// ManifestNotAvailableYet: kstatus InProgress, a simulated member still
// becoming available), none having failed its availability check.
func notYetAvailable(w *fleet.Work) bool {
	waiting := false
	for _, mc := range w.Status.ManifestConditions {
		c := meta.FindStatusCondition(mc.Conditions, fleet.WorkConditionTypeAvailable)
		switch {
		case c == nil || c.Status != metav1.ConditionFalse:
		case c.Reason == member.ManifestNotAvailableYetReason:
			waiting = true
		default:
			return false
		}
	}
	return waiting
}

func isTrue(c *metav1.Condition, gen int64) bool {
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

func isFalse(c *metav1.Condition, gen int64) bool {
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == gen
}

// identifier is a manifest of w as placement statuses name it, with the
// envelope w was made from.
func identifier(w *fleet.Work, id fleet.WorkResourceIdentifier) fleet.ResourceIdentifier {
	out := fleet.ResourceIdentifier{Group: id.Group, Version: id.Version, Kind: id.Kind, Name: id.Name, Namespace: id.Namespace}
	if t, ok := w.Labels[fleet.EnvelopeTypeLabel]; ok {
		out.Envelope = &fleet.EnvelopeIdentifier{Name: w.Labels[fleet.EnvelopeNameLabel], Namespace: w.Labels[fleet.EnvelopeNamespaceLabel], Type: t}
	}
	return out
}

// failedOf are w's manifests that failed to apply or are not available
// (extractFailedResourcePlacementsFromWork).
func failedOf(w *fleet.Work) []fleet.FailedResourcePlacement {
	if !isFalse(meta.FindStatusCondition(w.Status.Conditions, fleet.WorkConditionTypeApplied), w.Generation) &&
		!isFalse(meta.FindStatusCondition(w.Status.Conditions, fleet.WorkConditionTypeAvailable), w.Generation) {
		return nil
	}
	var out []fleet.FailedResourcePlacement
	for _, mc := range w.Status.ManifestConditions {
		for _, t := range []string{fleet.WorkConditionTypeApplied, fleet.WorkConditionTypeAvailable} {
			if c := meta.FindStatusCondition(mc.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
				cond := *c
				cond.Message = condmsg.Cap(cond.Message) // a binding holds up to 100
				out = append(out, fleet.FailedResourcePlacement{ResourceIdentifier: identifier(w, mc.Identifier), Condition: cond})
				break
			}
		}
	}
	return out
}

// driftedOf are w's manifests with drift details.
func driftedOf(w *fleet.Work) []fleet.DriftedResourcePlacement {
	var out []fleet.DriftedResourcePlacement
	for _, mc := range w.Status.ManifestConditions {
		if d := mc.DriftDetails; d != nil {
			out = append(out, fleet.DriftedResourcePlacement{ResourceIdentifier: identifier(w, mc.Identifier),
				ObservationTime: d.ObservationTime, TargetClusterObservedGeneration: d.ObservedInMemberClusterGeneration,
				FirstDriftedObservedTime: d.FirstDriftedObservedTime, ObservedDrifts: d.ObservedDrifts})
		}
	}
	return out
}

// diffedOf are w's manifests with diff details.
func diffedOf(w *fleet.Work) []fleet.DiffedResourcePlacement {
	var out []fleet.DiffedResourcePlacement
	for _, mc := range w.Status.ManifestConditions {
		if d := mc.DiffDetails; d != nil {
			out = append(out, fleet.DiffedResourcePlacement{ResourceIdentifier: identifier(w, mc.Identifier),
				ObservationTime: d.ObservationTime, TargetClusterObservedGeneration: d.ObservedInMemberClusterGeneration,
				FirstDiffedObservedTime: d.FirstDiffedObservedTime, ObservedDiffs: d.ObservedDiffs})
		}
	}
	return out
}

// pruneSkipped is the binding's PruneSkipped at gen from what its Works
// report at their generation (member.JoinPruneSkipped).
func pruneSkipped(works []*fleet.Work, gen int64) (metav1.Condition, bool) {
	var conds []metav1.Condition
	for _, w := range works {
		if c := meta.FindStatusCondition(w.Status.Conditions, fleet.WorkConditionTypePruneSkipped); isTrue(c, w.Generation) {
			conds = append(conds, *c)
		}
	}
	return member.JoinPruneSkipped(gen, conds)
}
