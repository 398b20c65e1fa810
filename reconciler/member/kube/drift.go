package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// outcome is what drift detection, takeover and diff reporting found in
// one pass over a delivery: objects held back (failed, with the drifts or
// diffs that explain them) and, with FullComparison, drifts in fields the
// apply does not own.
type outcome struct {
	member.Placements
	// held are the objects not applied, by idKey.
	held map[string]bool
}

func (o *outcome) hold(obj *unstructured.Unstructured, reason, err string, gen int64) {
	if o.held == nil {
		o.held = map[string]bool{}
	}
	o.held[idKey(member.Identify(obj))] = true
	o.Failed = append(o.Failed, member.FailedPlacement(obj, fleet.ResourceBindingApplied, reason,
		fmt.Sprintf(member.ManifestNotAppliedMessageFmt, err), gen))
}

// diff compares manifest with the member's live object as the comparison
// option says (KubeFleet's diffBetweenManifestAndInMemberClusterObjects):
// PartialComparison is Flux ssa's dry-run diff (a server-side apply dry
// run, so only the fields the manifest sets count), falling back to a full
// comparison (degraded) when the member's API server refuses the
// manifest as invalid; FullComparison compares every field but status and
// what KubeFleet ignores.
func (cl *cluster) diff(ctx context.Context, manifest, live *unstructured.Unstructured, option fleet.ComparisonOptionType) (details []fleet.PatchDetail, degraded bool, err error) {
	if option == fleet.ComparisonOptionTypeFullComparison {
		details, err = member.PatchDetails(manifest, live)
		return details, false, err
	}
	entry, current, merged, err := cl.rm.Diff(ctx, manifest.DeepCopy(), ssa.DefaultDiffOptions())
	switch {
	case err != nil && apierrors.IsInvalid(err):
		details, err = member.PatchDetails(manifest, live)
		return details, true, err
	case err != nil:
		return nil, false, fmt.Errorf("dry-run diff of %s: %w", describe(manifest), err)
	case entry.Action != ssa.ConfiguredAction || merged == nil:
		return nil, false, nil
	}
	details, err = member.PatchDetails(merged, current)
	return details, false, err
}

// gate decides, before an apply, which objects may be applied under the
// strategy (KubeFleet's work applier): an object gitfleet applied and
// someone changed since, under whenToApply: IfNotDrifted and an unchanged
// manifest, is held and reported drifted; an object the member already
// has that gitfleet did not apply is taken over (whenToTakeOver: Always),
// taken over only if it does not differ (IfNoDiff), or left alone
// (Never); one another placement holds (taken) is never taken over.
// Objects are compared concurrently; the outcome keeps their order.
//
// An object of ours at the version recorded after the last apply has not
// changed since, so it is not compared: a check costs a dry run only for
// the objects someone changed (held objects have no recorded version).
func (cl *cluster) gate(ctx context.Context, objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured,
	old record, strategy *fleet.ApplyStrategy, gen int64, taken inventory) (outcome, error) {
	hashes := old.hashes
	verdicts := make([]verdict, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for i, o := range objs {
		k := idKey(member.Identify(o))
		u, ours := live[k]
		switch {
		case ours && (strategy.WhenToApply != fleet.WhenToApplyTypeIfNotDrifted || hashes[k] == "" || hashes[k] != manifestHash(o)):
			continue // a new manifest is applied over whatever is there
		case ours && old.versions[k] != "" && old.versions[k] == version(u):
			continue // untouched since gitfleet applied it
		case !ours && taken[member.Identify(o)]:
			verdicts[i] = takenVerdict(strategy)
			continue
		case !ours && strategy.WhenToTakeOver == fleet.WhenToTakeOverTypeAlways:
			continue // created, or taken over, by the apply
		}
		g.Go(func() (err error) {
			verdicts[i], err = cl.judge(gctx, o, u, strategy)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return outcome{}, err
	}
	var out outcome
	for i, v := range verdicts {
		if v.reason == "" {
			continue
		}
		out.hold(objs[i], v.reason, v.err, gen)
		if v.drifted != nil {
			out.Drifted = append(out.Drifted, *v.drifted)
		}
		if v.diffed != nil {
			out.Diffed = append(out.Diffed, *v.diffed)
		}
	}
	return out, nil
}

// verdict is why gate holds one object back; empty when it does not.
type verdict struct {
	reason, err string
	drifted     *fleet.DriftedResourcePlacement
	diffed      *fleet.DiffedResourcePlacement
}

// judge is gate's decision on o: ours (the member's copy gitfleet
// applied) is compared for drifts; without it, the member is asked
// whether someone else's object is there to take over.
func (cl *cluster) judge(ctx context.Context, o, ours *unstructured.Unstructured, strategy *fleet.ApplyStrategy) (verdict, error) {
	if ours != nil {
		details, degraded, err := cl.diff(ctx, o, ours, strategy.ComparisonOption)
		if err != nil || len(details) == 0 {
			return verdict{}, err
		}
		v := verdict{reason: member.FoundDriftsReason, err: member.DriftsFoundError}
		if degraded {
			v.reason, v.err = member.FoundDriftsInDegradedModeReason, member.DriftsFoundInDegradedModeError
		}
		dr := member.DriftedPlacement(o, ours, details)
		v.drifted = &dr
		return v, nil
	}
	u, err := cl.get(ctx, o)
	if err != nil || u == nil {
		return verdict{}, err
	}
	if strategy.WhenToTakeOver == fleet.WhenToTakeOverTypeNever {
		return verdict{reason: member.NotTakenOverReason, err: member.NotTakenOverError}, nil
	}
	details, degraded, err := cl.diff(ctx, o, u, strategy.ComparisonOption)
	if err != nil || len(details) == 0 {
		return verdict{}, err
	}
	v := verdict{reason: member.FailedToTakeOverReason, err: member.DiffsFoundTakeOverError}
	if degraded {
		v.err = member.DiffsFoundTakeOverDegradedError
	}
	df := member.DiffedPlacement(o, u, details)
	v.diffed = &df
	return v, nil
}

// driftsAfterApply is KubeFleet's post-apply drift detection: with
// FullComparison, fields of the applied objects set by others (which an
// apply does not own, so does not restore) are reported as drifts.
func driftsAfterApply(objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured, held map[string]bool) ([]fleet.DriftedResourcePlacement, error) {
	var out []fleet.DriftedResourcePlacement
	for _, o := range objs {
		k := idKey(member.Identify(o))
		u, ok := live[k]
		if !ok || held[k] {
			continue
		}
		details, err := member.PatchDetails(o, u)
		if err != nil {
			return nil, err
		}
		if len(details) > 0 {
			out = append(out, member.DriftedPlacement(o, u, details))
		}
	}
	return out, nil
}

// reportDiff is the ReportDiff apply strategy: each object is compared
// with what the member holds, nothing is written to the member (not even
// a takeover), and an object the member does not have is reported whole.
func (cl *cluster) reportDiff(ctx context.Context, d member.Delivery, strategy *fleet.ApplyStrategy) ([]fleet.DiffedResourcePlacement, error) {
	found := make([]*fleet.DiffedResourcePlacement, len(d.Resources))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for i, r := range d.Resources {
		g.Go(func() error {
			u, err := cl.get(gctx, r)
			if err != nil {
				return err
			}
			if u == nil {
				df := member.DiffedPlacement(r, nil, nil)
				found[i] = &df
				return nil
			}
			details, _, err := cl.diff(gctx, r, u, strategy.ComparisonOption)
			if err == nil && len(details) > 0 {
				df := member.DiffedPlacement(r, u, details)
				found[i] = &df
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []fleet.DiffedResourcePlacement
	for _, df := range found {
		if df != nil {
			out = append(out, *df)
		}
	}
	return out, nil
}

// manifestHash identifies the manifest an object was last applied from
// (KubeFleet's last-applied manifest hash), over what comparisons see.
func manifestHash(u *unstructured.Unstructured) string {
	data, err := json.Marshal(member.Comparable(u).Object)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
