package updaterun

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
)

// A run, stage or cluster failure whose error is long (one line per failed
// cluster of a large stage, a binding's report) is capped in its condition
// (condmsg): a message over 32,768 characters makes the hub refuse the
// run's whole status write. A short one is kept exactly.
func TestFailureMessagesAreCapped(t *testing.T) {
	short := "cannot continue the updateRun: the stage `canary` has failed"
	long := "cannot continue the updateRun: " + strings.Repeat("the cluster `member` in the stage canary has failed, ", 1000)
	for _, tc := range []struct{ name, msg, want string }{
		{"short", short, short},
		{"long", long, long[:condmsg.Max-48] + "… (52055 more characters)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pass{log: slog.New(slog.DiscardHandler), run: &fleet.UpdateRun{}, gen: 1, now: time.Unix(0, 0)}
			stage := &fleet.StageUpdatingStatus{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member"}}}
			p.markClusterFailed(stage.StageName, &stage.Clusters[0], tc.msg)
			p.markStageFailed(stage, tc.msg)
			p.markRunFailed(tc.msg)
			for what, c := range map[string]*metav1.Condition{
				"cluster": find(stage.Clusters[0].Conditions, fleet.ClusterUpdatingConditionSucceeded),
				"stage":   find(stage.Conditions, fleet.StageUpdatingConditionSucceeded),
				"run":     find(p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded),
			} {
				if c == nil || c.Message != tc.want {
					t.Errorf("%s's Succeeded = %.200v, want the message %.200q", what, c, tc.want)
				}
			}
		})
	}
}
