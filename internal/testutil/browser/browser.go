// Package browser starts Debian's headless Chromium for baton's browser
// tests (chromedp; it never downloads a browser) and holds the few page
// helpers they share.
package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Patience bounds each wait on the page; only a hang reaches it.
const Patience = 60 * time.Second

// Chromium finds Debian's Chromium. Outside CI a machine without it skips
// the browser tests; under CI=true (where .ci/run installs it) its absence
// fails them.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := chromiumPath(); p != "" {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium at /usr/bin/chromium: .ci/run should have installed it (apt-get install chromium)")
	}
	t.Skip("no Chromium installed (apt-get install chromium); the browser test needs one")
	return ""
}

func chromiumPath() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/chromium-headless-shell"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a headless Chromium with a fresh profile for the test and
// returns a tab context; the browser stops when the test ends.
func Start(t testing.TB) context.Context {
	t.Helper()
	ctx, stop := StartWithProfile(t, filepath.Join(t.TempDir(), "chromium"))
	t.Cleanup(stop)
	return ctx
}

// StartWithProfile starts a headless Chromium keeping its profile
// (cookies included) in dir, and returns a tab context and a stop that
// closes the browser the way a person quits it, so the profile is saved;
// a second browser on the same dir is the first one restarted.
func StartWithProfile(t testing.TB, dir string) (context.Context, func()) {
	t.Helper()
	Chromium(t) // skips, or fails under CI, without one
	// A browser that dies while starting (seen on loaded CI machines:
	// Chromium crashing before it prints its DevTools address) says
	// nothing about baton; start it again, and fail only when it keeps
	// failing.
	const attempts = 3
	var errs []string
	for i := 0; i < attempts; i++ {
		ctx, stop, err := start(dir)
		if err == nil {
			return ctx, stop
		}
		errs = append(errs, err.Error())
		t.Logf("start chromium (attempt %d of %d): %v", i+1, attempts, err)
	}
	t.Fatalf("start chromium: failed %d times; last: %s", attempts, errs[len(errs)-1])
	return nil, nil
}

func start(dir string) (context.Context, func(), error) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(dir),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = chromedp.Cancel(ctx) // closes the browser gracefully and waits for it
		cancel()
		cancelAlloc()
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		stop()
		return nil, nil, err
	}
	return ctx, stop, nil
}

// Poll waits until the JavaScript expression js is true in the page, and
// fails the test saying what it waited for, with the page's text.
func Poll(ctx context.Context, t testing.TB, what, js string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, Patience)
	defer cancel()
	var err error
	for {
		// A navigation ends the poll with the page it ran in: poll the
		// next one.
		if _, err = chromedp.Run(wctx, chromedp.Poll[bool](js)); err == nil || wctx.Err() != nil {
			break
		}
	}
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, body)
	}
}

// Eval is the value of the JavaScript expression js in the page.
func Eval[T any](ctx context.Context, t testing.TB, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// JSString is s as a JavaScript string literal.
func JSString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\u2028", `\u2028`, "\u2029", `\u2029`)
	return `"` + r.Replace(s) + `"`
}
