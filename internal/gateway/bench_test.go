package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
)

// BenchmarkHandoffPickup measures a handoff from the terminal's request
// over the control socket to the destination's first send, as the web
// page sees it, with the model answering at once. Each iteration is 200
// handoffs of separate sessions; p50 and p99 are reported.
func BenchmarkHandoffPickup(b *testing.B) {
	r := newRig(b, rigOpts{})
	pg := r.openPage(b)
	ctx := context.Background()
	const n = 200
	for b.Loop() {
		lat := make([]time.Duration, 0, n)
		for range n {
			sess := r.terminalSession(b)
			start := time.Now()
			h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
			if err != nil {
				b.Fatal(err)
			}
			_ = h
			pg.await("first send", typ("message"))
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
	}
}
