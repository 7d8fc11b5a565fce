package telegram

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
)

func TestRenderHTML(t *testing.T) {
	cases := []struct{ md, want string }{
		{"plain & <simple>", "plain &amp; &lt;simple&gt;"},
		{"**bold** *it* ~~gone~~ `a<b`", "<b>bold</b> <i>it</i> <s>gone</s> <code>a&lt;b</code>"},
		{"# Title\n\ntext", "<b>Title</b>\n\ntext"},
		{"- one\n- two\n  - nested", "• one\n• two\n  • nested"},
		{"3. c\n4. d", "3. c\n4. d"},
		{"> quoted\n> more", "<blockquote>quoted\nmore</blockquote>"},
		{"```python\nprint('<x>')\n```", `<pre><code class="language-python">print('&lt;x&gt;')</code></pre>`},
		{"```\nno lang\n```", "<pre>no lang</pre>"},
		{"    indented code", "<pre>indented code</pre>"},
		{"[site](https://example.com/?a=1&b=\"2\")", `<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">site</a>`},
		{"[rel](/relative) and [js](javascript:alert(1))", "rel and js"},
		{"<https://go.dev>", `<a href="https://go.dev">https://go.dev</a>`},
		{"raw <b>html</b> stays text", "raw &lt;b&gt;html&lt;/b&gt; stays text"},
		{"escaped \\*stars\\* &amp; &copy;", "escaped *stars* &amp; ©"},
		{"a  \nb", "a\nb"},
		{"---", "———"},
	}
	for _, c := range cases {
		got := renderHTML(c.md)
		if got != c.want {
			t.Errorf("renderHTML(%q)\n got %q\nwant %q", c.md, got, c.want)
		}
		if _, err := telegramtest.CheckHTML(got); err != nil {
			t.Errorf("renderHTML(%q) = %q, which Telegram refuses: %v", c.md, got, err)
		}
	}
}

func FuzzRenderHTML(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c`", "```go\nx<y\n```", "[l](https://x.y/\"<>)", "> - *q*", "<i>raw</i> &amp; &#x41;", "~~s~~ ***bi***"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		h := renderHTML(md)
		if _, err := telegramtest.CheckHTML(h); err != nil {
			t.Fatalf("renderHTML(%q) = %q, refused: %v", md, h, err)
		}
	})
}

func TestStripBotName(t *testing.T) {
	cases := []struct {
		in, bot, out string
		forUs        bool
	}{
		{"/handoff@mybot cli", "mybot", "/handoff cli", true},
		{"/handoff@MyBot", "mybot", "/handoff", true},
		{"/start@other", "mybot", "", false},
		{"/start@any", "", "/start", true},
		{"/help", "mybot", "/help", true},
		{"mail me@mybot", "mybot", "mail me@mybot", true},
		{"/resume@mybot\nline two", "mybot", "/resume\nline two", true},
	}
	for _, c := range cases {
		out, ok := stripBotName(c.in, c.bot)
		if ok != c.forUs || (ok && out != c.out) {
			t.Errorf("stripBotName(%q, %q) = %q, %v; want %q, %v", c.in, c.bot, out, ok, c.out, c.forUs)
		}
	}
}

func TestTopicName(t *testing.T) {
	if got := topicName("  "); got != "baton" {
		t.Errorf("blank title → %q", got)
	}
	if got := topicName("fix\nthe   bug"); got != "fix the bug" {
		t.Errorf("got %q", got)
	}
	long := topicName(strings.Repeat("😀", 100))
	if n := platform.UTF16Len(long); n > maxTopicName || !strings.HasSuffix(long, "…") {
		t.Errorf("long title → %d units, %q", n, long)
	}
}

func TestDecodeUpdateSkips(t *testing.T) {
	for name, raw := range map[string]string{
		"no message":    `{"update_id":1,"edited_message":{"message_id":1}}`,
		"from a bot":    `{"update_id":2,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"from":{"id":9,"is_bot":true},"text":"hi"}}`,
		"no text":       `{"update_id":3,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"from":{"id":9},"sticker":{}}}`,
		"channel":       `{"update_id":4,"message":{"message_id":1,"chat":{"id":-1,"type":"channel"},"from":{"id":9},"text":"hi"}}`,
		"no sender":     `{"update_id":5,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"text":"hi"}}`,
		"not an object": `{"update_id":6,"message":[]}`,
	} {
		id, _, ok, _ := decodeUpdate([]byte(raw), "bot", nil)
		if ok {
			t.Errorf("%s: decoded an event", name)
		}
		if id == 0 {
			t.Errorf("%s: lost the update id", name)
		}
	}
	id, ev, ok, err := decodeUpdate([]byte(`{"update_id":7,"message":{"message_id":3,"date":1700000000,"chat":{"id":1,"type":"private"},"from":{"id":1,"first_name":"A","last_name":"B"},"caption":"photo text"}}`), "", nil)
	if err != nil || !ok || id != 7 || ev.Text != "photo text" || ev.Sender != "A B" || ev.ID != "1:3" || ev.Time.Unix() != 1700000000 {
		t.Errorf("caption update → %d %+v %v %v", id, ev, ok, err)
	}
}

// FuzzDecodeUpdate: any bytes never panic; any message update that
// decodes gives an event whose address key parses back to the address.
func FuzzDecodeUpdate(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"message_thread_id":5,"is_topic_message":true,"date":1,"chat":{"id":-1001,"type":"supergroup","is_forum":true},"from":{"id":3,"first_name":"x"},"text":"/go@bot a"}}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"chat":{"id":7,"type":"private"},"from":{"id":7},"text":"hi"}}`))
	f.Add([]byte(`{"update_id":9,"message":{"chat":{"type":"group"},"from":{},"text":"/"}}`))
	f.Add([]byte(`{"update_id":2,"message":{"message_id":3,"chat":{"id":7,"type":"private"},"from":{"id":7},"document":{"file_id":"d","file_unique_id":"u","file_size":9}}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, ev, ok, err := decodeUpdate(raw, "bot", nil)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("event with an error: %v", err)
		}
		back, perr := platform.ParseKey(ev.At.Key())
		if perr != nil || back != ev.At {
			t.Fatalf("key %q of %+v parses to %+v, %v", ev.At.Key(), ev.At, back, perr)
		}
		if ev.ID == "" || ev.SenderID == "" || strings.TrimSpace(ev.Text) == "" && len(ev.Attachments) == 0 {
			t.Fatalf("incomplete event %+v", ev)
		}
		if ev.At.Kind == platform.Thread && ev.At.Thread == "" {
			t.Fatalf("thread without a thread id: %+v", ev.At)
		}
		// Re-encoding the message the event came from decodes to the same.
		var u wireUpdate
		if json.Unmarshal(raw, &u) != nil {
			t.Fatalf("decoded an event from undecodable JSON")
		}
	})
}

func TestDecodeUpdateFilesOnly(t *testing.T) {
	raw := `{"update_id":8,"message":{"message_id":4,"date":1,"chat":{"id":1,"type":"private"},"from":{"id":1,"first_name":"A"},` +
		`"photo":[{"file_id":"s","file_unique_id":"us","width":90,"height":67,"file_size":1200},{"file_id":"l","file_unique_id":"ul","width":1280,"height":960,"file_size":150000}]}}`
	_, ev, ok, err := decodeUpdate([]byte(raw), "bot", nil)
	if err != nil || !ok || ev.Text != "" || len(ev.Attachments) != 1 {
		t.Fatalf("photo without caption → %+v %v %v", ev, ok, err)
	}
	if a := ev.Attachments[0]; a.Kind != platform.KindPhoto || a.ID != "ul" || a.Size != 150000 {
		t.Errorf("photo attachment %+v, want the largest size", a)
	}
}

func TestLargestPhotoThatFits(t *testing.T) {
	size := func(id string, w, h, n int64) wireFile {
		return wireFile{FileID: id, Width: w, Height: h, FileSize: n}
	}
	for name, c := range map[string]struct {
		sizes []wireFile
		want  string
	}{
		"largest":           {[]wireFile{size("s", 90, 90, 1000), size("l", 1280, 1280, 200000), size("m", 320, 320, 20000)}, "l"},
		"largest that fits": {[]wireFile{size("s", 90, 90, 1000), size("m", 800, 800, 80000), size("l", 9000, 9000, MaxDownload+1)}, "m"},
		"none fits":         {[]wireFile{size("l", 9000, 9000, MaxDownload+5), size("m", 8000, 8000, MaxDownload+1)}, "m"},
		"sizes untold":      {[]wireFile{size("s", 90, 90, 0), size("l", 1280, 960, 0)}, "l"},
	} {
		got, ok := largestPhoto(c.sizes)
		if !ok || got.FileID != c.want {
			t.Errorf("%s: picked %q, want %q", name, got.FileID, c.want)
		}
	}
	if _, ok := largestPhoto(nil); ok {
		t.Error("a photo of no sizes")
	}
}

func TestFilePathStaysInTheBotsFiles(t *testing.T) {
	for in, want := range map[string]string{
		"photos/file_1.jpg":          "photos/file_1.jpg",
		"documents/my report #2.pdf": "documents/my%20report%20%232.pdf",
	} {
		if got, err := filePath(in); err != nil || got != want {
			t.Errorf("filePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/var/lib/telegram-bot-api/x.jpg", "../bot999/secret", "photos/../../x", "https://evil.example/x", `photos\x.jpg`, "photos//x"} {
		if got, err := filePath(bad); err == nil {
			t.Errorf("filePath(%q) = %q, want refused", bad, got)
		}
	}
}
