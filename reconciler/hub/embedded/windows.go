package embedded

import (
	"context"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// RolloutWindows are people's objects from Git, kept like overrides: the
// status tree has no files for them, the admitter applies them again after
// a restart. A change wakes every run (hub.EventRolloutWindow): one that
// waits for a window may now start, or must not.

func (h *Hub) applyRolloutWindow(w *fleet.RolloutWindow) {
	before, _ := h.peekRolloutWindow(keyOf(w))
	applyOverride(h, w, &h.windows, fleet.KindRolloutWindow, func(w *fleet.RolloutWindow) any { return &w.Spec })
	if after, _ := h.peekRolloutWindow(keyOf(w)); after != before {
		h.windowChanged(keyOf(w))
	}
}

func (h *Hub) deleteRolloutWindow(key hub.Key) {
	if _, ok := h.peekRolloutWindow(key); !ok {
		return
	}
	deleteOverride(h, key, &h.windows)
	h.windowChanged(key)
}

func (h *Hub) peekRolloutWindow(key hub.Key) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.windows.peek(key)
	if !ok {
		return "", false
	}
	return w.ResourceVersion, true
}

func (h *Hub) windowChanged(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	h.emit(hub.Event{Kind: hub.EventRolloutWindow, Key: key})
}

// ListRolloutWindows implements hub.RolloutWindows (and lists every window
// for the Git loop, so that those removed from Git are deleted).
func (h *Hub) ListRolloutWindows(context.Context) ([]*fleet.RolloutWindow, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.windows.list(nil), nil
}
