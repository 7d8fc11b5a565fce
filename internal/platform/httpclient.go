package platform

import "net/http"

// MaxServiceConns is how many connections an adapter's default client
// opens to its service at most, all kept alive. The standard library's
// default keeps two idle and opens without bound, so a burst of
// conversations answered at once opened a connection per request and
// closed most of them right after; beyond the bound a request waits for a
// connection to be free.
const MaxServiceConns = 16

// NewHTTPClient is the client an adapter uses for its service's API when
// its configuration gives none. Requests carry their own deadlines (from
// their contexts), so it has no global timeout.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxServiceConns
	t.MaxConnsPerHost = MaxServiceConns
	return &http.Client{Transport: t}
}
