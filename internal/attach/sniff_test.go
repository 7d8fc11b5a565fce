package attach

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
	"time"
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b, image.NewRGBA(image.Rect(0, 0, 7, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// oggPage is one Ogg page holding body.
func oggPage(granule int64, seq uint32, body []byte) []byte {
	var segs []byte
	n := len(body)
	for ; n >= 255; n -= 255 {
		segs = append(segs, 255)
	}
	segs = append(segs, byte(n))
	h := make([]byte, 27)
	copy(h, "OggS")
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], 7)
	binary.LittleEndian.PutUint32(h[18:], seq)
	h[26] = byte(len(segs))
	return append(append(h, segs...), body...)
}

// opusFile is an Ogg Opus stream of length d with pre-skip 312.
func opusFile(d time.Duration) []byte {
	head := []byte("OpusHead\x01\x01")
	head = binary.LittleEndian.AppendUint16(head, 312)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0)
	f := oggPage(0, 0, head)
	f = append(f, oggPage(0, 1, []byte("OpusTags........"))...)
	total := int64(d) * 48000 / int64(time.Second)
	var g int64
	for seq := uint32(2); g < total; seq++ {
		g = min(g+48000/5, total)
		f = append(f, oggPage(312+g, seq, bytes.Repeat([]byte{byte(seq)}, 300+int(seq)*37))...)
	}
	return f
}

func TestSniff(t *testing.T) {
	vp8x := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	vp8x = append(vp8x, 0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00) // 640 x 480
	vp8l := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f")
	vp8l = binary.LittleEndian.AppendUint32(vp8l, 99|(49<<14)) // 100 x 50
	vp8l = append(vp8l, make([]byte, 8)...)
	heic := []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic")
	for _, c := range []struct {
		name, want string
		data       []byte
		w, h       int
	}{
		{"png", "image/png", encoded(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }), 7, 3},
		{"jpeg", "image/jpeg", encoded(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }), 7, 3},
		{"gif", "image/gif", encoded(t, func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) }), 7, 3},
		{"webp extended", "image/webp", vp8x, 640, 480},
		{"webp lossless", "image/webp", vp8l, 100, 50},
		{"heic", "image/heic", append(heic, make([]byte, 40)...), 0, 0},
		{"pdf", "application/pdf", []byte("%PDF-1.4\n%âãÏÓ\n"), 0, 0},
		{"ogg opus", "audio/ogg", opusFile(time.Second), 0, 0},
		{"text", "text/plain; charset=utf-8", []byte("just words\n"), 0, 0},
		{"unknown", "application/octet-stream", []byte{0, 1, 2, 3, 0xfe}, 0, 0},
	} {
		got := Sniff(c.data)
		if got != (Info{MediaType: c.want, Width: c.w, Height: c.h}) {
			t.Errorf("%s: %+v, want %s %dx%d", c.name, got, c.want, c.w, c.h)
		}
	}
}

func TestOggDurationStreamed(t *testing.T) {
	f := opusFile(3*time.Second + 250*time.Millisecond)
	for _, chunk := range []int{1, 7, 27, 4096, len(f)} {
		var o OggDuration
		for b := f; len(b) > 0; {
			n := min(chunk, len(b))
			o.Write(b[:n])
			b = b[n:]
		}
		if got := o.Duration(); got != 3*time.Second+250*time.Millisecond {
			t.Errorf("written %d bytes at a time: %v, want 3.25s", chunk, got)
		}
	}
	var o OggDuration
	o.Write([]byte("not an ogg file at all, just text that goes on"))
	if o.Duration() != 0 {
		t.Errorf("not ogg: %v", o.Duration())
	}
}

// A voice note in AAC (ADTS frames, as Signal records them) is audio.
func TestSniffADTS(t *testing.T) {
	frame := func(n int) []byte {
		f := make([]byte, n)
		f[0], f[1], f[2] = 0xFF, 0xF1, 0x50
		f[3] = 0x80 | byte(n>>11)&0x03
		f[4] = byte(n >> 3)
		f[5] = byte(n<<5) | 0x1F
		f[6] = 0xFC
		return f
	}
	aac := append(frame(200), frame(180)...)
	if got := Sniff(aac).MediaType; got != "audio/aac" {
		t.Errorf("ADTS sniffed as %s", got)
	}
	if got := Sniff(append([]byte{0xFF, 0xF1, 0, 0, 0, 0, 0}, make([]byte, 50)...)).MediaType; got == "audio/aac" {
		t.Error("a sync word with no frame length is taken for AAC")
	}
}
