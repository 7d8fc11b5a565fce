package platform

import (
	"net/http"

	"github.com/baton-agent/baton/internal/keepalive"
)

// MaxServiceConns is how many connections an adapter's default client
// opens to its service at most, all kept alive (see package keepalive).
const MaxServiceConns = 16

// NewHTTPClient is the client an adapter uses for its service's API when
// its configuration gives none.
func NewHTTPClient() *http.Client { return keepalive.Client(MaxServiceConns) }
