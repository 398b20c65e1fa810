package reconciler

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The kinds of object whose write lost to a Conflict, as ConflictKind
// names them (a bounded label of gitfleet_hub_write_conflicts_total).
const (
	ConflictBinding   = "binding"
	ConflictUpdateRun = "updaterun"
	ConflictApproval  = "approval"
	ConflictOther     = "other"
)

// ConflictKinds lists every kind ConflictKind returns, so a metric can
// export each at 0 before its first Conflict.
var ConflictKinds = []string{ConflictBinding, ConflictUpdateRun, ConflictApproval, ConflictOther}

// ConflictKind names the kind of object a Conflict is about, from the
// resource the API error carries (both hubs name it as the API server
// does: clusterresourcebindings, stagedupdateruns, ...): binding,
// updaterun, approval, or other.
func ConflictKind(err error) string {
	var s apierrors.APIStatus
	if !errors.As(err, &s) || s.Status().Details == nil {
		return ConflictOther
	}
	switch resource := s.Status().Details.Kind; {
	case strings.HasSuffix(resource, "resourcebindings"):
		return ConflictBinding
	case strings.HasSuffix(resource, "stagedupdateruns"):
		return ConflictUpdateRun
	case strings.HasSuffix(resource, "approvalrequests"):
		return ConflictApproval
	}
	return ConflictOther
}
