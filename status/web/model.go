package web

import (
	"slices"
	"strings"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/status"
)

// model is the fleet as one status tree records it.
type model struct {
	rev        string
	runs       []*fleet.UpdateRun
	placements []*fleet.Placement
	bindings   []*fleet.Binding
	clusters   []*fleet.MemberCluster
	approvals  map[hub.Key]*fleet.ApprovalRequest
	snapshots  map[hub.Key]resourcesnapshot.Groups
	// problems are the files that did not read, shown on the fleet page.
	problems []string
}

// load reads the status tree and the approval requests of files. A file
// that does not read is a problem the fleet page lists; the rest is shown.
func load(files status.Files, rev string) *model {
	m := &model{rev: rev, approvals: map[hub.Key]*fleet.ApprovalRequest{}}
	var snapshots []*fleet.ResourceSnapshot
	for _, dir := range []string{status.StatusDir, status.ApprovalsDir} {
		stored, errs := status.ReadObjects(files, dir)
		for _, err := range errs {
			m.problems = append(m.problems, err.Error())
		}
		for _, so := range stored {
			switch o := so.Object.(type) {
			case *fleet.UpdateRun:
				m.runs = append(m.runs, o)
			case *fleet.Placement:
				m.placements = append(m.placements, o)
			case *fleet.Binding:
				m.bindings = append(m.bindings, o)
			case *fleet.MemberCluster:
				m.clusters = append(m.clusters, o)
			case *fleet.ResourceSnapshot:
				snapshots = append(snapshots, o)
			case *fleet.ApprovalRequest:
				m.approvals[hub.Key{Namespace: o.Namespace, Name: o.Name}] = o
			}
		}
	}
	m.snapshots = resourcesnapshot.ByPlacement(snapshots)
	slices.SortFunc(m.runs, func(a, b *fleet.UpdateRun) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return m
}

// run is the run ns/name, or nil.
func (m *model) run(ns, name string) *fleet.UpdateRun {
	for _, r := range m.runs {
		if r.Namespace == ns && r.Name == name {
			return r
		}
	}
	return nil
}

// cluster is the member cluster name, or nil.
func (m *model) cluster(name string) *fleet.MemberCluster {
	for _, c := range m.clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// bindingsOf are the bindings of placement ns/name.
func (m *model) bindingsOf(ns, placement string) []*fleet.Binding {
	var out []*fleet.Binding
	for _, b := range m.bindings {
		if b.Namespace == ns && b.Labels[fleet.PlacementTrackingLabel] == placement {
			out = append(out, b)
		}
	}
	return out
}
