package updaterun

import (
	"errors"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// RejectedSnapshotFmt is gitfleet's initialization error for a run whose
// resource snapshot its placement rejects (fleet.RejectedSnapshotAnnotationPrefix):
// it takes the index, the placement, the annotation and its reason.
const RejectedSnapshotFmt = "resource snapshot index `%s` of placement `%s` is rejected by its annotation %s: %s"

// reasonedAbort is a terminal error recorded with its own condition reason
// rather than upstream's.
type reasonedAbort struct {
	reason string
	err    error
}

func (e *reasonedAbort) Error() string { return e.err.Error() }
func (e *reasonedAbort) Unwrap() error { return e.err }

// abortReason is the condition reason of the terminal error err: its own,
// or def.
func abortReason(err error, def string) string {
	var r *reasonedAbort
	if errors.As(err, &r) {
		return r.reason
	}
	return def
}

// checkRejected refuses a run whose resource snapshot the placement rejects.
func (p *pass) checkRejected(placement *fleet.Placement, st *fleet.UpdateRunStatus) error {
	idx := st.ResourceSnapshotIndexUsed
	why, ok := fleet.RejectedSnapshots(placement.Annotations)[idx]
	if !ok {
		return nil
	}
	return &reasonedAbort{reason: fleet.UpdateRunResourceSnapshotRejectedReason,
		err: validationAbort(userErr(RejectedSnapshotFmt, idx, keyName(p.placementKey()), fleet.RejectedSnapshotAnnotation(idx), why))}
}
