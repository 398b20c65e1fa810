package gitops

import (
	"context"
	"time"

	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// PropertyInterval is how often serve looks again at what members report
// by themselves (a kubeconfig member's nodes and pods): KubeFleet's member
// agent reports properties on every heartbeat, 60s by default.
const PropertyInterval = 60 * time.Second

// collectProperties keeps the members' status properties current
// (member.PropertyCollector): at start, after every member change (a
// simulated member's annotations) and every PropertyInterval. What it
// writes is committed at once, so the status tree and the scheduler see
// the same fleet.
func (d *Daemon) collectProperties(ctx context.Context) {
	h, ok := d.Hub.(member.MemberStatusHub)
	if !ok {
		return
	}
	c := &member.PropertyCollector{Hub: h, Now: d.clock.Now, Log: d.log.With("component", "properties")}
	if o, ok := d.cfg.Clusters.(member.NodeObserver); ok {
		c.Observer = o
	}
	wake := make(chan struct{}, 1)
	if n, ok := d.Hub.(hub.Notifier); ok {
		n.Subscribe(func(e hub.Event) {
			if e.Kind == hub.EventMemberCluster {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
	}
	t := time.NewTicker(PropertyInterval)
	defer t.Stop()
	for {
		d.group.begin()
		n, err := c.Sync(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("member properties not observed; the members keep what they reported last", "err", err.Error())
		}
		if err := d.group.end(ctx, n > 0); err != nil && ctx.Err() == nil {
			d.log.Warn("commit member properties", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}
