package gitops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// stageWindows is what an approval pull request says about the
// RolloutWindows of the stage approving releases (README "Rollout windows
// and freezes"): merging approves, yet no cluster starts while a window is
// closed or a freeze holds.
type stageWindows struct {
	// Stage names, Members the members' own (gitfleet.io/rollout-windows).
	Stage, Members []string
	// Wait is what the stage would wait for if merged when the body was
	// written ("" when its windows are open then).
	Wait string
	At   time.Time
}

// windowsOf reads the windows of stage idx of run, and what they hold at
// now.
func windowsOf(ctx context.Context, h hub.Hub, run *fleet.UpdateRun, idx int, clusters []string, now time.Time) (*stageWindows, error) {
	s := run.Status.StagedUpdateStrategySnapshot
	if s == nil || idx >= len(s.Stages) {
		return nil, nil
	}
	w := &stageWindows{Stage: s.Stages[idx].Windows, At: now.UTC().Truncate(time.Second)}
	members, err := h.ListMemberClusters(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if !slices.Contains(clusters, m.Name) {
			continue
		}
		for _, n := range fleet.WindowNames(m.Annotations[fleet.RolloutWindowsAnnotation]) {
			if !slices.Contains(w.Members, n) {
				w.Members = append(w.Members, n)
			}
		}
	}
	if len(w.Stage) == 0 && len(w.Members) == 0 {
		return nil, nil
	}
	if len(w.Stage) == 0 {
		return w, nil
	}
	var all []*fleet.RolloutWindow
	if wh, ok := h.(hub.RolloutWindows); ok {
		if all, err = wh.ListRolloutWindows(ctx); err != nil {
			return nil, err
		}
	}
	var ws []*fleet.RolloutWindow
	for _, n := range w.Stage {
		i := slices.IndexFunc(all, func(x *fleet.RolloutWindow) bool { return x.Name == n })
		if i < 0 {
			w.Wait = fleet.WindowWait{Window: n, Missing: true}.String()
			return w, nil
		}
		ws = append(ws, all[i])
	}
	if wait, held := fleet.WaitForWindows(ws, w.At, hub.KeyString(hub.Key{Namespace: run.Namespace, Name: run.Name})); held {
		w.Wait = wait.String()
	}
	return w, nil
}

// write adds the body's section; nothing for a stage without windows.
func (w *stageWindows) write(out func(string, ...any)) {
	if w == nil {
		return
	}
	out("\n### Rollout windows\n\n")
	if len(w.Stage) > 0 {
		out("The stage's clusters start only while %s %s open.", quoted(w.Stage), plural(w.Stage, "is", "are"))
		if w.Wait != "" {
			out(" Merged now (%s), the stage would be %s.", w.At.Format(time.RFC3339), w.Wait)
		} else {
			out(" %s open now (%s).", plural(w.Stage, "It is", "They are"), w.At.Format(time.RFC3339))
		}
		out("\n")
	}
	if len(w.Members) > 0 {
		out("Some of its clusters also wait for their own %s: %s.\n", plural(w.Members, "window", "windows"), quoted(w.Members))
	}
	out("A freeze holds the stage even once this is merged, unless the freeze's `allowedRuns` names the run.\n")
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("`%s`", n)
	}
	return strings.Join(q, ", ")
}

func plural(names []string, one, many string) string {
	if len(names) == 1 {
		return one
	}
	return many
}
