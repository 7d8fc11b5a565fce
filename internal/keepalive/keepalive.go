// Package keepalive builds the HTTP clients baton talks to services with:
// a bounded number of connections per host, all kept alive. The standard
// library's default transport keeps two idle connections and opens
// without bound, so a burst of conversations answered at once opened a
// connection (and over HTTPS, a handshake) per request and closed most of
// them right after. Beyond the bound a request waits for a connection to
// be free.
package keepalive

import "net/http"

// Client is an HTTP client that opens at most conns connections to each
// host and keeps them all alive. Requests carry their own deadlines (from
// their contexts), so it has no global timeout.
func Client(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = conns
	t.MaxConnsPerHost = conns
	return &http.Client{Transport: t}
}
