package main

import "log/slog"

// durationsAsText writes a time.Duration the way flags take it ("1m30s"),
// in JSON too, where slog would write nanoseconds.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
