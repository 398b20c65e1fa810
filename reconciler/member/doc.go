// Package member holds the delivery drivers of the embedded hub: what puts a
// bound resource snapshot on a member cluster, takes it off again, and
// reports back how that went as binding conditions.
//
// The embedded hub decides when a delivery happens (only after the binding
// change that asked for it is durable, see reconciler/hub/embedded.Hub.Commit); a Driver
// only does it. Drivers never write bindings themselves: they report through
// a Reporter, the narrow write the hub offers them, so every report is an
// ordinary hub write that raises change events and wakes the engine at once.
//
// The driver of a MemberCluster is named by its gitfleet.io/driver
// annotation: "simulated" (an in-process member, see Simulated), or
// "kubeconfig:<context>" (a real cluster; not implemented yet). A member
// without the annotation gets Applied=False naming the missing annotation:
// nothing is silently faked.
//
// Members also report KubeFleet's properties for property-based scheduling
// (properties.go): a simulated member its annotations, a real one what its
// nodes and pods say; PropertyCollector writes them into the members'
// status on either hub.
package member
