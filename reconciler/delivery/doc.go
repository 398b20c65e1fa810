// Package delivery is gitfleet's work generator (KubeFleet's
// pkg/controllers/workgenerator), written once for both hubs against the
// hub seam (hub.Hub): it turns binding changes into deliveries and
// removals, holds a delivered binding with the work-cleanup finalizer
// until its resources are off the member again, makes what a member
// receives (the binding's resource snapshot group, envelopes unwrapped,
// its frozen override snapshots applied, as Works named and split as
// KubeFleet's), and takes the members' reports onto the bindings.
//
// A hub only stores: it tells the Controller what changed (Observe,
// MemberChanged, Resync) and runs Dispatch once its changes are durable
// (the embedded hub after its flush, with Guard before it; the kube hub at
// once, its writes being durable on the API server). Member transports
// (reconciler/member's drivers: simulated, kubeconfig:<context>, and
// work, for an agent that pulls) plug in below the controller; they
// report through the controller (ReportBindingStatus), or, for a pulled
// member, through the Works' status (Status).
package delivery
