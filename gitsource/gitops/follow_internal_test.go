package gitops

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// What /readyz and /healthz say of the loop: ready while the last success
// is recent enough (or maxAge is 0), with the error that fails since;
// unhealthy only while one fetch and sync runs longer than maxDuration.
func TestHealthOfTheLoop(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	const url = "https://git.example/fleet.git"
	var h health
	if err := h.ready(t0, time.Minute, url); err == nil || !strings.Contains(err.Error(), "no fetch was attempted") {
		t.Errorf("ready before any sync: %v; want no fetch attempted", err)
	}
	if err := h.ready(t0, 0, url); err != nil {
		t.Errorf("ready with maxAge 0: %v", err)
	}
	h.begin(t0)
	h.synced(t0.Add(time.Second), nil)
	if err := h.ready(t0.Add(time.Minute), time.Minute, url); err != nil {
		t.Errorf("ready a minute after a success: %v", err)
	}
	h.begin(t0.Add(2 * time.Minute))
	if err := h.healthy(t0.Add(3*time.Minute), 5*time.Minute, url); err != nil {
		t.Errorf("healthy a minute into a sync: %v", err)
	}
	if err := h.healthy(t0.Add(8*time.Minute), 5*time.Minute, url); err == nil || !strings.Contains(err.Error(), "wedged") {
		t.Errorf("healthy six minutes into a sync: %v; want wedged", err)
	}
	h.synced(t0.Add(8*time.Minute), errors.New("fetch: repository not found"))
	if err := h.healthy(t0.Add(9*time.Minute), 5*time.Minute, url); err != nil {
		t.Errorf("healthy between syncs: %v", err)
	}
	err := h.ready(t0.Add(9*time.Minute), time.Minute, url)
	if err == nil || !strings.Contains(err.Error(), "repository not found") || !strings.Contains(err.Error(), "was 8m59s ago") {
		t.Errorf("ready after a failure: %v; want the age of the last success and the failure", err)
	}
}
