package platform_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// A burst of requests far over the bound shares the client's kept
// connections: none is opened only to be closed again.
func TestHTTPClientBurstStaysWithinTheConnectionBound(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := platform.NewHTTPClient()
	defer c.CloseIdleConnections()
	const requests = 4 * platform.MaxServiceConns
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if err != nil {
				errs <- err
				return
			}
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := opened.Load(); n > platform.MaxServiceConns {
		t.Errorf("%d requests at once opened %d connections; the bound is %d", requests, n, platform.MaxServiceConns)
	}
}
