package updaterun

import (
	"fmt"
	"slices"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Rollout windows and freezes (gitfleet's; api/v1beta1/window.go). A
// cluster of an update stage starts only while every RolloutWindow its
// stage (StageConfig.Windows) and its MemberCluster
// (gitfleet.io/rollout-windows) name is open; a freeze holds it even once
// the stage is approved, unless the freeze's allowedRuns names the run. The check is made when a cluster would start, never after: a
// window that closes while a stage is under way lets the clusters in flight
// finish and starts no new one; the stage then waits, with the window's
// message, and the run wakes itself when the windows next open. A cluster
// held by its own member's window does not hold up the clusters after it in
// the stage (members in other time zones would otherwise wait for each
// other). A name no RolloutWindow has holds the cluster for good: a typo
// must not let an update through a freeze. The deletion stage has no
// windows.

// Messages of a stage and a run waiting for a window.
const (
	// RunWaitingForWindowMessageFmt takes the wait
	// ("waiting for window <name> (opens <time>)") and the stage.
	RunWaitingForWindowMessageFmt = "The updateRun is %s in stage %s"
)

// windowGate answers, within one pass, whether a cluster may start now.
type windowGate struct {
	p       *pass
	loaded  bool
	windows map[string]*fleet.RolloutWindow
}

// hold reports what keeps a cluster of stage cfg from starting now, if
// anything, and which overridden freeze, if any, it starts in.
func (g *windowGate) hold(cfg *fleet.StageConfig, member []string) (wait fleet.WindowWait, held bool, overridden string, err error) {
	names := append(slices.Clone(cfg.Windows), member...)
	if len(names) == 0 {
		return fleet.WindowWait{}, false, "", nil
	}
	if err := g.load(); err != nil {
		return fleet.WindowWait{}, false, "", err
	}
	ws := make([]*fleet.RolloutWindow, 0, len(names))
	for _, n := range names {
		w, ok := g.windows[n]
		if !ok {
			return fleet.WindowWait{Window: n, Missing: true}, true, "", nil
		}
		if !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	now := g.p.now
	wait, held = fleet.WaitForWindows(ws, now, hub.KeyString(g.p.key()))
	if held {
		return wait, true, "", nil
	}
	if without, frozen := fleet.WaitForWindows(ws, now, ""); frozen {
		overridden = without.Window
	}
	return fleet.WindowWait{}, false, overridden, nil
}

func (g *windowGate) load() error {
	if g.loaded {
		return nil
	}
	g.loaded = true
	g.windows = map[string]*fleet.RolloutWindow{}
	wh, ok := g.p.r.Hub.(hub.RolloutWindows)
	if !ok {
		return nil
	}
	ws, err := wh.ListRolloutWindows(g.p.ctx)
	if err != nil {
		return fmt.Errorf("listing rollout windows: %w", err)
	}
	for _, w := range ws {
		g.windows[w.Name] = w
	}
	return nil
}

// memberWindows maps each member cluster naming RolloutWindows to their
// names; nil when none does.
func memberWindows(members []*fleet.MemberCluster) map[string][]string {
	var out map[string][]string
	for _, m := range members {
		if names := fleet.WindowNames(m.Annotations[fleet.RolloutWindowsAnnotation]); len(names) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[m.Name] = names
		}
	}
	return out
}

// earliest is the wait that opens first; one that opens at no known time
// comes last.
func earliest(waits []fleet.WindowWait) fleet.WindowWait {
	best := waits[0]
	for _, w := range waits[1:] {
		if !w.Opens.IsZero() && (best.Opens.IsZero() || w.Opens.Before(best.Opens)) {
			best = w
		}
	}
	return best
}

// waitForWindow marks the stage and the run waiting for the window that
// opens first and comes back when it does; a window that does not open
// within the horizon (or does not exist) leaves the run blocked until a
// change in Git wakes it.
func (p *pass) waitForWindow(stage *fleet.StageUpdatingStatus, waits []fleet.WindowWait) outcome {
	w := earliest(waits)
	p.markStageWaiting(stage, w.String())
	p.markRunWaitingForWindow(w, stage.StageName)
	if w.Opens.IsZero() {
		return outcome{after: ApprovalPollInterval, blocked: true}
	}
	return outcome{after: max(w.Opens.Sub(p.now), time.Second)}
}

// recordOverriddenFreeze records, once, a freeze a cluster of the stage
// started in by the run's override.
func recordOverriddenFreeze(stage *fleet.StageUpdatingStatus, freeze string) {
	if freeze != "" && !slices.Contains(stage.OverriddenFreezes, freeze) {
		stage.OverriddenFreezes = append(stage.OverriddenFreezes, freeze)
	}
}
