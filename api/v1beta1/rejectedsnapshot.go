package v1beta1

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RejectedSnapshotAnnotationPrefix marks a resource snapshot of a placement
// as rejected (gitfleet's, not KubeFleet's): the annotation
// gitfleet.io/rejected-snapshot-<index> on the placement, its value the
// reason, makes every update run of the placement that would roll out
// snapshot <index> refuse to initialize, and no rollback targets it. It is
// on the placement, so that it is reviewed in Git beside what it guards and
// both hubs carry it as they carry the placement.
const RejectedSnapshotAnnotationPrefix = GitfleetPrefix + "rejected-snapshot-"

// UpdateRunResourceSnapshotRejectedReason is gitfleet's reason of the
// Initialized=False condition of a run whose resource snapshot the
// placement rejects.
const UpdateRunResourceSnapshotRejectedReason = "ResourceSnapshotRejected"

// RejectedSnapshots are the resource snapshot indexes the placement's
// annotations reject, each with its reason; malformed annotations (which
// validation refuses) are left out.
func RejectedSnapshots(annotations map[string]string) map[string]string {
	var out map[string]string
	for k, v := range annotations {
		idx, ok := strings.CutPrefix(k, RejectedSnapshotAnnotationPrefix)
		if !ok || rejectedIndexProblem(idx) != "" || strings.TrimSpace(v) == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[idx] = strings.TrimSpace(v)
	}
	return out
}

// RejectedSnapshotAnnotation is the annotation that rejects the snapshot
// index.
func RejectedSnapshotAnnotation(index string) string { return RejectedSnapshotAnnotationPrefix + index }

// rejectedIndexProblem says what is wrong with the index part of a
// rejection annotation ("" when nothing).
func rejectedIndexProblem(idx string) string {
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || strconv.Itoa(n) != idx {
		return fmt.Sprintf("the key must be %s<index>, the index of a resource snapshot (an integer >= 0, no sign or leading zero), not %q",
			RejectedSnapshotAnnotationPrefix, idx)
	}
	return ""
}

// validateRejectedSnapshots checks the placement's rejection annotations:
// a valid index in the key and a reason as the value.
func validateRejectedSnapshots(annotations map[string]string) field.ErrorList {
	var keys []string
	for k := range annotations {
		if strings.HasPrefix(k, RejectedSnapshotAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs field.ErrorList
	p := field.NewPath("metadata", "annotations")
	for _, k := range keys {
		if msg := rejectedIndexProblem(strings.TrimPrefix(k, RejectedSnapshotAnnotationPrefix)); msg != "" {
			errs = append(errs, field.Invalid(p.Key(k), annotations[k], msg))
			continue
		}
		if strings.TrimSpace(annotations[k]) == "" {
			errs = append(errs, field.Required(p.Key(k), "the reason the resource snapshot is rejected"))
		}
	}
	return errs
}
