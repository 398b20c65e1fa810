package gitops_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

// fatalRecorder is a test whose Fatal ends the calling goroutine and is
// kept, and whose waits end deadline from now (less await's grace).
type fatalRecorder struct {
	testing.TB
	deadline time.Time
	fatal    string
}

func (f *fatalRecorder) Deadline() (time.Time, bool) { return f.deadline, true }
func (f *fatalRecorder) Fatal(args ...any)           { f.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.Fatal(fmt.Sprintf(format, args...))
}

// A run that ended in another phase never reaches the one waited for:
// waitPhase fails at once, saying what the status tree shows, instead of
// waiting until shortly before the binary's -timeout.
func TestWaitPhaseFailsAtOnceWhenTheRunEndedInAnotherPhase(t *testing.T) {
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "example-run"}, Status: fleet.UpdateRunStatus{
		Conditions: []metav1.Condition{
			{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue, Reason: "UpdateRunInitializedSuccessfully", LastTransitionTime: metav1.Now()},
			{Type: fleet.StagedUpdateRunConditionSucceeded, Status: metav1.ConditionFalse, Reason: fleet.UpdateRunFailedReason, LastTransitionTime: metav1.Now()},
		}}}
	data, err := status.Encode(run)
	if err != nil {
		t.Fatal(err)
	}
	r := newFleetRepo(t, map[string][]byte{"status/runs/example-run.yaml": data})
	// The waits of rec end 30 s from now (await's grace before the
	// deadline): a wait that only ends there says it gave up waiting.
	rec := &fatalRecorder{TB: t, deadline: time.Now().Add(time.Minute)}
	waiting := *r
	waiting.t = rec
	done := make(chan struct{})
	go func() {
		defer close(done)
		waiting.waitPhase("example-run", fleet.PhaseSucceeded)
	}()
	<-done
	if !strings.Contains(rec.fatal, "run example-run: it ended Failed") ||
		!strings.Contains(rec.fatal, "status/runs/example-run.yaml shows it Failed") {
		t.Errorf("waitPhase failed with %q, want it to say the run ended Failed and what the tree shows", rec.fatal)
	}
}
