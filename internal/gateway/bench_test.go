package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
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

// firstTokenDelay is the fake model's fixed time to first token in
// BenchmarkHandoffFirstWord, for the note's call and the greeting's alike.
const firstTokenDelay = 50 * time.Millisecond

// BenchmarkHandoffFirstWord measures a handoff from the terminal's
// request to the first streamed word of the greeting on the web page,
// with the model taking firstTokenDelay to its first token. Each
// iteration is 100 handoffs of separate sessions; p50 and p99 are
// reported, and the same less the model's time to first token: what the
// handoff itself adds.
func BenchmarkHandoffFirstWord(b *testing.B) {
	r := newRig(b, rigOpts{quiet: true, answer: func(llmtest.Request) llmtest.Step {
		return llmtest.Reply{Text: "Hello here; we were booking the 9:40 train.", FirstToken: firstTokenDelay}
	}})
	r.model.Aside(isNoteRequest, func(llmtest.Request) llmtest.Step {
		return llmtest.Reply{Text: rigNote, FirstToken: firstTokenDelay}
	})
	pg := r.openPage(b)
	ctx := context.Background()
	const n = 100
	for b.Loop() {
		lat := make([]time.Duration, 0, n)
		for range n {
			sess := r.terminalSession(b)
			start := time.Now()
			if _, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"}); err != nil {
				b.Fatal(err)
			}
			pg.await("the first word", typ("delta"))
			lat = append(lat, time.Since(start))
			pg.await("the first message", typ("message"))
		}
		slices.Sort(lat)
		p50, p99 := lat[n/2], lat[n*99/100]
		b.ReportMetric(ms(p50), "p50-ms")
		b.ReportMetric(ms(p99), "p99-ms")
		b.ReportMetric(ms(p50-firstTokenDelay), "p50-over-ttft-ms")
		b.ReportMetric(ms(p99-firstTokenDelay), "p99-over-ttft-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
