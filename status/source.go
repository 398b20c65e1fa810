package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// SourceProgress says how following the branch goes, for the commit that
// records it: "source main applied 1a2b3c4" or "source main failing: <err>".
func SourceProgress(s *fleet.GitSource) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, fleet.GitSourceConditionReady); c != nil && c.Status == metav1.ConditionFalse {
		msg := firstLine(c.Message)
		if len(msg) > 100 {
			msg = msg[:100] + "..."
		}
		return "source " + s.Spec.Branch + " failing: " + msg
	}
	if s.Status.LastAppliedCommit == "" {
		return "source " + s.Spec.Branch + " followed"
	}
	return "source " + s.Spec.Branch + " applied " + shortHash(s.Status.LastAppliedCommit)
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
