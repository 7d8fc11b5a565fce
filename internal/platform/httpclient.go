package platform

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/baton-agent/baton/internal/keepalive"
)

// MaxServiceConns is how many connections an adapter's default client
// opens to its service at most, all kept alive (see package keepalive).
const MaxServiceConns = 16

// NewHTTPClient is the client an adapter uses for its service's API when
// its configuration gives none.
func NewHTTPClient() *http.Client { return keepalive.Client(MaxServiceConns) }

// DefaultRequestTimeout bounds one call to a service when the adapter's
// configuration gives no bound.
const DefaultRequestTimeout = 30 * time.Second

// RequestTimeout is d, or DefaultRequestTimeout where d is not positive.
func RequestTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultRequestTimeout
	}
	return d
}

// HTTPClientOr is c, or NewHTTPClient where the configuration gives none.
func HTTPClientOr(c *http.Client) *http.Client {
	if c == nil {
		return NewHTTPClient()
	}
	return c
}

// Logger is the log an adapter writes to: l, or the default where the
// configuration gives none, each line tagged with the platform's name.
func Logger(l *slog.Logger, platform string) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return l.With("platform", platform)
}
