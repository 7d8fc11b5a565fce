package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Fixed delays of the fake endpoints in BenchmarkVoiceNoteToAnswer.
const (
	benchTranscribeDelay = 200 * time.Millisecond
	benchFirstToken      = 100 * time.Millisecond
)

// BenchmarkVoiceNoteToAnswer is a 7-second voice note sent to the bot
// through the Telegram fake, transcribed and answered by a real `baton
// gateway`, timed from the update being queued to the answer's text
// being sent. The transcription endpoint takes 200 ms and the model 100 ms
// to its first token; what baton adds beyond them is reported, p50 and
// p99. Run at most 20 notes a run (-benchtime 18x): past that the owner's
// message rate (gateway.DefaultRate) refuses them.
func BenchmarkVoiceNoteToAnswer(b *testing.B) {
	const forum = -100781
	fake := telegramtest.New(b, "123456:voice-bench")
	fake.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	owner := telegramtest.User{ID: 1, FirstName: "Owner"}
	srv := llmtest.Start(b)
	var n atomic.Int64
	srv.SetTranscriber(func(llmtest.Transcription) llmtest.Step {
		time.Sleep(benchTranscribeDelay)
		return llmtest.Reply{Text: fmt.Sprintf("note %d", n.Add(1))}
	})
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		return llmtest.Reply{Text: "answer to " + lastVoice(r), FirstToken: benchFirstToken}
	})
	home := b.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(b, batonHome, fmt.Sprintf("web:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n"+
		"gateway:\n  owners:\n    telegram: [\"1\"]\n  homes:\n    telegram: \"telegram:group:%d\"\n", fake.Token(), fake.URL(), forum))
	gw := startGatewayB(b, env, batonHome)
	note := llmtest.VoiceNote(7 * time.Second)

	var extra []time.Duration
	for b.Loop() {
		want := fmt.Sprintf("answer to note %d", n.Load()+1)
		start := time.Now()
		fake.PushVoice(forum, 0, owner, note)
		var took time.Duration
		if !testutil.Poll(testutil.Context(b, time.Minute), func() bool {
			for _, m := range fake.Sent() {
				if m.Plain == want {
					took = time.Since(start)
					return true
				}
			}
			return false
		}) {
			b.Fatalf("no %q:\n%s", want, gw.Log())
		}
		extra = append(extra, took-benchTranscribeDelay-benchFirstToken)
	}
	slices.Sort(extra)
	b.ReportMetric(float64(extra[len(extra)/2].Microseconds())/1000, "added-p50-ms")
	b.ReportMetric(float64(extra[(len(extra)*99)/100].Microseconds())/1000, "added-p99-ms")
}

// lastVoice is the transcript the request's last user message carries.
func lastVoice(r llmtest.Request) string {
	text := fmt.Sprint(r.Messages())
	i := strings.LastIndex(text, "): note ")
	if i < 0 {
		return "?"
	}
	rest := text[i+len("): "):]
	if j := strings.IndexAny(rest, "]"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
