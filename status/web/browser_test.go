package web

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// One headless Chromium serves every test of the binary, a tab each.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    string
)

// tab opens a tab of the shared browser for the test; it closes with the
// test. Without Debian's chromium the test is skipped, and under CI=true
// it fails instead.
func tab(t testing.TB) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		path, err := exec.LookPath("chromium")
		if err != nil {
			browserErr = "chromium is not installed (apt-get install chromium): the web view's browser tests need it"
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.WindowSize(1400, 900), chromedp.Flag("disable-gpu", true))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		if err := chromedp.Do(ctx); err != nil {
			cancel()
			cancelAlloc()
			browserErr = "chromium does not start: " + err.Error()
			return
		}
		browserCtx = ctx
		browserCancel = func() { cancel(); cancelAlloc() }
	})
	if browserErr != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(browserErr)
		}
		t.Skip(browserErr)
	}
	ctx, cancelDeadline := context.WithDeadline(browserCtx, await.Deadline(t))
	ctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(func() { cancel(); cancelDeadline() })
	return ctx
}

func closeBrowser() {
	if browserCancel != nil {
		browserCancel()
	}
}

// do runs the actions in the tab.
func do(t testing.TB, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval is the value of a JavaScript expression in the tab.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression holds in the tab (until
// the test's deadline: a slow machine only waits longer).
func waitFor(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}
