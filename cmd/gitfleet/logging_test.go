package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Durations read as Go durations in both log formats, never nanoseconds.
func TestLogsWriteDurationsAsGoDurations(t *testing.T) {
	for name, handler := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{ReplaceAttr: durationsAsText})
		},
		"text": func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: durationsAsText})
		},
	} {
		var b bytes.Buffer
		slog.New(handler(&b)).Info("waiting", "retry_in", 90*time.Second, slog.Group("push", "lag", 1500*time.Millisecond))
		out := b.String()
		for _, want := range []string{"1m30s", "1.5s"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q lacks %s", name, out, want)
			}
		}
		if strings.Contains(out, "90000000000") {
			t.Errorf("%s: %q has nanoseconds", name, out)
		}
	}
}
