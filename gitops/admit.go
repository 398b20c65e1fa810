package gitops

import (
	"context"
	"fmt"
	"strings"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/hub"
	"github.com/gitfleet/gitfleet/hub/embedded"
	"github.com/gitfleet/gitfleet/render"
)

// RejectedChangeAnnotation on a run or placement (in its status file) says
// why the spec in Git was not accepted; the last accepted spec keeps being
// used, as it would behind an API server that rejected the update.
const RejectedChangeAnnotation = fleet.GitfleetPrefix + "rejected-change"

// Admitter feeds the fleet objects of the tracked branch's tip into the hub,
// playing the API server's part: a spec change raises the generation,
// updates the API server would refuse are refused with its message, objects
// that failed to render are withheld (kept as they were), deleted files
// delete their objects.
type Admitter struct {
	hub *embedded.Hub
	// sources remembers where each object came from in the last render, so
	// a file that stops rendering withholds its objects instead of
	// deleting them.
	sources map[render.ObjectRef]render.Source
}

func refOf(group, kind, namespace, name string) render.ObjectRef {
	return render.ObjectRef{Group: group, Kind: kind, Namespace: namespace, Name: name}
}

// NewAdmitter returns an Admitter feeding h.
func NewAdmitter(h *embedded.Hub) *Admitter { return &Admitter{hub: h} }

// Admit applies content and returns the rejected changes, one line each.
func (a *Admitter) Admit(ctx context.Context, c *render.Content) ([]string, error) {
	var rejected []string
	keep := func(ref render.ObjectRef) bool {
		return c.Withheld(ref, a.sources[ref].File)
	}

	a.hub.SetResources(c.Resources)

	seenMembers := map[string]bool{}
	for _, m := range c.Members {
		seenMembers[m.Name] = true
		a.hub.ApplyMemberCluster(m)
	}
	members, err := a.hub.ListMemberClusters(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if !seenMembers[m.Name] && !keep(refOf(fleet.ClusterGroup, fleet.KindMemberCluster, "", m.Name)) {
			a.hub.DeleteMemberCluster(m.Name)
		}
	}

	seenPlacements := map[hub.Key]bool{}
	for _, p := range c.Placements {
		key := hub.Key{Namespace: p.Namespace, Name: p.Name}
		seenPlacements[key] = true
		if old, err := a.hub.GetPlacement(ctx, key); err == nil {
			if errs := fleet.ValidatePlacementUpdate(old, p); len(errs) > 0 {
				msg := rejection(c, refOf(fleet.PlacementGroup, p.Kind, p.Namespace, p.Name), errs.ToAggregate().Error())
				a.hub.AnnotatePlacement(key, RejectedChangeAnnotation, msg)
				rejected = append(rejected, msg)
				continue
			}
		}
		a.hub.ApplyPlacement(p)
		a.hub.AnnotatePlacement(key, RejectedChangeAnnotation, "")
	}
	placements, err := a.hub.ListPlacements(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range placements {
		key := hub.Key{Namespace: p.Namespace, Name: p.Name}
		if !seenPlacements[key] && !keep(refOf(fleet.PlacementGroup, p.Kind, p.Namespace, p.Name)) {
			a.hub.DeletePlacement(key)
		}
	}

	seenStrategies := map[hub.Key]bool{}
	for _, s := range c.Strategies {
		seenStrategies[hub.Key{Namespace: s.Namespace, Name: s.Name}] = true
		a.hub.ApplyUpdateStrategy(s)
	}
	for _, s := range a.hub.ListUpdateStrategies() {
		key := hub.Key{Namespace: s.Namespace, Name: s.Name}
		if !seenStrategies[key] && !keep(refOf(fleet.PlacementGroup, s.Kind, s.Namespace, s.Name)) {
			a.hub.DeleteUpdateStrategy(key)
		}
	}

	seenRuns := map[hub.Key]bool{}
	for _, r := range c.Runs {
		key := hub.Key{Namespace: r.Namespace, Name: r.Name}
		seenRuns[key] = true
		if old, err := a.hub.GetUpdateRun(ctx, key); err == nil {
			if errs := fleet.ValidateUpdateRunUpdate(old, r); len(errs) > 0 {
				msg := rejection(c, refOf(fleet.PlacementGroup, r.Kind, r.Namespace, r.Name), errs.ToAggregate().Error())
				a.hub.AnnotateUpdateRun(key, RejectedChangeAnnotation, msg)
				rejected = append(rejected, msg)
				continue
			}
		}
		a.hub.ApplyUpdateRun(r)
		a.hub.AnnotateUpdateRun(key, RejectedChangeAnnotation, "")
	}
	runs, err := a.hub.ListUpdateRuns(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		key := hub.Key{Namespace: r.Namespace, Name: r.Name}
		if !seenRuns[key] && !keep(refOf(fleet.PlacementGroup, r.Kind, r.Namespace, r.Name)) {
			a.hub.DeleteUpdateRun(key)
		}
	}

	rejected = append(rejected, a.noteWithheld(ctx, c)...)
	a.sources = c.Sources
	return rejected, nil
}

// noteWithheld tells, on the status file of a run or placement whose file
// no longer renders, why its last good version is still the one in use —
// the person who pushed the typo reads it where they look for progress.
func (a *Admitter) noteWithheld(ctx context.Context, c *render.Content) []string {
	var notes []string
	for _, e := range c.Errors {
		if e.Name == "" {
			continue
		}
		key := hub.Key{Namespace: e.Namespace, Name: e.Name}
		msg := fmt.Sprintf("the manifest no longer renders (%s); the last accepted spec is still in use", e.Error())
		switch e.Kind {
		case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
			if _, err := a.hub.GetUpdateRun(ctx, key); err == nil {
				a.hub.AnnotateUpdateRun(key, RejectedChangeAnnotation, msg)
				notes = append(notes, msg)
			}
		case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
			if _, err := a.hub.GetPlacement(ctx, key); err == nil {
				a.hub.AnnotatePlacement(key, RejectedChangeAnnotation, msg)
				notes = append(notes, msg)
			}
		}
	}
	return notes
}

// rejection words a refused update the way a person reads it in the status
// file: which file, what was refused, what keeps running.
func rejection(c *render.Content, ref render.ObjectRef, why string) string {
	file := c.Sources[ref].File
	if file == "" {
		file = "the repository"
	}
	why = strings.TrimSpace(why)
	return fmt.Sprintf("the change to %s %s in %s was rejected: %s; the last accepted spec is still in use", ref.Kind, ref.Name, file, why)
}
