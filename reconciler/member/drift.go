package member

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Per-resource reasons and errors of KubeFleet's work applier
// (pkg/controllers/workapplier) for drift detection, takeover and diff
// reporting, shown in failedPlacements as "Failed to apply the manifest
// (error: <err>)".
const (
	FoundDriftsReason               = "FoundDrifts"
	FoundDriftsInDegradedModeReason = "FoundDriftsInDegradedMode"
	FailedToTakeOverReason          = "FailedToTakeOver"
	NotTakenOverReason              = "NotTakenOver"

	DriftsFoundError = "cannot apply manifest: drifts are found between the manifest and the object from the member cluster"
	// DriftsFoundInDegradedModeError: the member's API server refused the
	// manifest in a dry run, so the comparison is a full one.
	DriftsFoundInDegradedModeError  = DriftsFoundError + " in degraded mode (full comparison is performed instead of partial comparison, as the manifest object is considered to be invalid by the member cluster API server)"
	DiffsFoundTakeOverError         = "cannot take over object: configuration differences are found between the manifest object and the corresponding object in the member cluster"
	DiffsFoundTakeOverDegradedError = "cannot take over object: configuration differences are found between the manifest object and the corresponding object in the member cluster in degraded mode (full comparison is performed instead of partial comparison, as the manifest object is considered to be invalid by the member cluster API server)"
	NotTakenOverError               = "no ownership of the object in the member cluster; takeover is needed"
	// OwnedByAnotherPlacementError: the object is another placement's on
	// the member (KubeFleet: another AppliedWork owns it), which no apply
	// strategy takes over.
	OwnedByAnotherPlacementError = "failed to take over a pre-existing object: the object is already owned by another Fleet AppliedWork object"
	// ManifestNotAppliedMessageFmt wraps one of the errors above.
	ManifestNotAppliedMessageFmt = "Failed to apply the manifest (error: %s)"

	// WholeObjectPath and WholeObjectValue are the one patch detail of an
	// object the member does not have yet (ReportDiff).
	WholeObjectPath  = "/"
	WholeObjectValue = "(the whole object)"

	// maxPatchDetails bounds the details of one object, as KubeFleet's
	// patchDetailPerObjLimit; maxDriftedPlacements and maxDiffedPlacements
	// bound the entries of a binding (maxDriftedResourcePlacementLimit,
	// maxDiffedResourcePlacementLimit).
	maxPatchDetails      = 100
	maxDriftedPlacements = 100
	maxDiffedPlacements  = 100

	redacted = "(redacted for security reasons)"
)

// reservedDomains mark labels and annotations nobody sets by hand
// (Kubernetes', KubeFleet's and gitfleet's own): comparisons ignore them.
var reservedDomains = []string{"kubernetes.io/", "k8s.io/", "kubernetes-fleet.io/", fleet.GitfleetPrefix}

// PatchDetails is how the member's object differs from the hub side (the
// manifest, or for a partial comparison what a dry-run apply of it made of
// the member's object), field by field, as KubeFleet's work applier
// reports it: JSON pointers, at most 100, status, managed fields, owner
// references and reserved labels ignored, a Secret's data redacted.
func PatchDetails(hubSide, memberSide *unstructured.Unstructured) ([]fleet.PatchDetail, error) {
	src, dst := Comparable(hubSide), Comparable(memberSide)
	srcJSON, err := src.MarshalJSON()
	if err != nil {
		return nil, err
	}
	dstJSON, err := dst.MarshalJSON()
	if err != nil {
		return nil, err
	}
	patch, err := jsondiff.CompareJSON(srcJSON, dstJSON)
	if err != nil {
		return nil, fmt.Errorf("compare the hub and member objects: %w", err)
	}
	var out []fleet.PatchDetail
	for _, op := range patch {
		if len(out) >= maxPatchDetails {
			break
		}
		switch op.Type {
		case jsondiff.OperationAdd:
			out = append(out, fleet.PatchDetail{Path: op.Path, ValueInMember: fmt.Sprint(op.Value)})
		case jsondiff.OperationRemove:
			out = append(out, fleet.PatchDetail{Path: op.Path, ValueInHub: fmt.Sprintf("%v", pointerValue(src.Object, op.Path))})
		case jsondiff.OperationReplace:
			out = append(out, fleet.PatchDetail{Path: op.Path, ValueInMember: fmt.Sprint(op.Value),
				ValueInHub: fmt.Sprintf("%v", pointerValue(src.Object, op.Path))})
		case jsondiff.OperationMove:
			v := fmt.Sprintf("%v", pointerValue(src.Object, op.From))
			out = append(out, fleet.PatchDetail{Path: op.From, ValueInHub: v}, fleet.PatchDetail{Path: op.Path, ValueInMember: v})
		case jsondiff.OperationCopy:
			out = append(out, fleet.PatchDetail{Path: op.Path, ValueInMember: fmt.Sprintf("%v", pointerValue(src.Object, op.From))})
		}
	}
	if hubSide.GetAPIVersion() == "v1" && hubSide.GetKind() == "Secret" {
		for i := range out {
			if p := out[i].Path; strings.HasPrefix(p, "/data") || strings.HasPrefix(p, "/stringData") {
				if out[i].ValueInHub != "" {
					out[i].ValueInHub = redacted
				}
				if out[i].ValueInMember != "" {
					out[i].ValueInMember = redacted
				}
			}
		}
	}
	return out, nil
}

// Comparable is u without what KubeFleet leaves out of comparisons
// (discardFieldsIrrelevantInComparisonFrom).
func Comparable(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	c.SetName("")
	c.SetNamespace("")
	c.SetGenerateName("")
	c.SetAnnotations(unreserved(c.GetAnnotations()))
	c.SetLabels(unreserved(c.GetLabels()))
	c.SetFinalizers(nil)
	c.SetManagedFields(nil)
	c.SetOwnerReferences(nil)
	c.SetDeletionTimestamp(nil)
	c.SetDeletionGracePeriodSeconds(nil)
	c.SetGeneration(0)
	c.SetResourceVersion("")
	c.SetSelfLink("")
	c.SetUID("")
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(c.Object, "spec", "jobTemplate", "spec", "template", "metadata", "creationTimestamp")
	if m, ok := c.Object["metadata"].(map[string]any); ok && len(m) == 0 {
		delete(c.Object, "metadata")
	}
	return c
}

func unreserved(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		reserved := false
		for _, d := range reservedDomains {
			if strings.Contains(k, d) {
				reserved = true
				break
			}
		}
		if !reserved {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// pointerValue is the value at an RFC 6901 pointer in obj, nil when
// there is none.
func pointerValue(obj map[string]any, pointer string) any {
	if pointer == "" {
		return obj
	}
	var cur any = obj
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			cur = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

// Placements are the per-resource details of a report: what failed, what
// drifted, what differs. Observation times are left to the hub
// (MergeReport), which keeps when each was first seen.
type Placements = hub.ReportedPlacements

// DriftedPlacement is u's drift from the hub, as the member holds it.
func DriftedPlacement(manifest, live *unstructured.Unstructured, details []fleet.PatchDetail) fleet.DriftedResourcePlacement {
	return fleet.DriftedResourcePlacement{ResourceIdentifier: Identify(manifest),
		TargetClusterObservedGeneration: live.GetGeneration(), ObservedDrifts: details}
}

// DiffedPlacement is how the member's object differs from manifest; live
// is nil when the member does not have it.
func DiffedPlacement(manifest, live *unstructured.Unstructured, details []fleet.PatchDetail) fleet.DiffedResourcePlacement {
	d := fleet.DiffedResourcePlacement{ResourceIdentifier: Identify(manifest), ObservedDiffs: details}
	if live != nil {
		g := live.GetGeneration()
		d.TargetClusterObservedGeneration = &g
	} else {
		d.ObservedDiffs = []fleet.PatchDetail{{Path: WholeObjectPath, ValueInHub: WholeObjectValue}}
	}
	return d
}

// capped sorts the details of a report by resource and keeps the first
// 100 of each kind, as KubeFleet's work generator does.
func capped(p Placements) Placements {
	less := func(a, b fleet.ResourceIdentifier) bool { return identifierKey(a) < identifierKey(b) }
	if len(p.Drifted) > maxDriftedPlacements {
		sort.SliceStable(p.Drifted, func(i, j int) bool { return less(p.Drifted[i].ResourceIdentifier, p.Drifted[j].ResourceIdentifier) })
		p.Drifted = p.Drifted[:maxDriftedPlacements]
	}
	if len(p.Diffed) > maxDiffedPlacements {
		sort.SliceStable(p.Diffed, func(i, j int) bool { return less(p.Diffed[i].ResourceIdentifier, p.Diffed[j].ResourceIdentifier) })
		p.Diffed = p.Diffed[:maxDiffedPlacements]
	}
	if len(p.Failed) > maxFailedPlacements {
		p.Failed = p.Failed[:maxFailedPlacements]
	}
	return p
}

func identifierKey(id fleet.ResourceIdentifier) string {
	return id.Group + "/" + id.Version + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}
