package imagefit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func dims(t *testing.T, data []byte) (int, int, string) {
	t.Helper()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("result is no image: %v", err)
	}
	return cfg.Width, cfg.Height, format
}

func TestFitScalesALargePhotoToTheBound(t *testing.T) {
	out, mt, err := Fit(llmtest.Photo(4000, 3000), 2048)
	if err != nil {
		t.Fatal(err)
	}
	w, h, format := dims(t, out)
	if w != 2048 || h != 1536 || format != "jpeg" || mt != "image/jpeg" {
		t.Fatalf("got %d×%d %s (%s), want 2048×1536 jpeg", w, h, format, mt)
	}
}

func TestFitStripsEXIFLocation(t *testing.T) {
	in := llmtest.WithEXIF(llmtest.Photo(64, 48), 1)
	if !bytes.Contains(in, []byte(llmtest.GPSPlace)) {
		t.Fatal("test photo lacks its GPS EXIF")
	}
	if _, _, err := image.Decode(bytes.NewReader(in)); err != nil {
		t.Fatalf("test photo does not decode: %v", err)
	}
	// Small enough to need no scaling: the metadata alone must force a
	// clean copy.
	out, _, err := Fit(in, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(llmtest.GPSPlace)) || bytes.Contains(out, []byte("Exif\x00")) {
		t.Fatal("EXIF (with its GPS location) survived Fit")
	}
	if w, h, _ := dims(t, out); w != 64 || h != 48 {
		t.Fatalf("got %d×%d, want 64×48", w, h)
	}
	// Scaled, too.
	out, _, err = Fit(llmtest.WithEXIF(llmtest.Photo(3000, 2000), 1), 1568)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(llmtest.GPSPlace)) {
		t.Fatal("EXIF survived scaling")
	}
}

func TestFitTurnsAPhotoAsItsEXIFSays(t *testing.T) {
	// Orientation 6: the camera was held upright, the pixels lie on their side.
	out, _, err := Fit(llmtest.WithEXIF(llmtest.Photo(400, 300), 6), 2048)
	if err != nil {
		t.Fatal(err)
	}
	if w, h, _ := dims(t, out); w != 300 || h != 400 {
		t.Fatalf("got %d×%d, want 300×400 (turned upright)", w, h)
	}
}

func TestFitTurnsClockwiseForOrientation6(t *testing.T) {
	// Left half red, right half blue; turned clockwise, red is on top.
	img := image.NewRGBA(image.Rect(0, 0, 64, 32))
	for y := range 32 {
		for x := range 64 {
			c := color.RGBA{255, 0, 0, 255}
			if x >= 32 {
				c = color.RGBA{0, 0, 255, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	out, _, err := Fit(llmtest.WithEXIF(b.Bytes(), 6), 2048)
	if err != nil {
		t.Fatal(err)
	}
	got, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	top, bottom := got.At(16, 8), got.At(16, 56)
	if r, _, bl, _ := top.RGBA(); r < bl {
		t.Errorf("top is %v, want red", top)
	}
	if r, _, bl, _ := bottom.RGBA(); bl < r {
		t.Errorf("bottom is %v, want blue", bottom)
	}
}

func TestFitLeavesACleanImageThatFitsAsItIs(t *testing.T) {
	in := llmtest.Photo(640, 480)
	out, mt, err := Fit(in, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if &out[0] != &in[0] || mt != "image/jpeg" {
		t.Fatal("a clean JPEG within the bound was re-encoded")
	}
	// Fit's own output passes through again untouched.
	once, _, _ := Fit(llmtest.Photo(4000, 3000), 2048)
	twice, _, _ := Fit(once, 2048)
	if &once[0] != &twice[0] {
		t.Fatal("Fit re-encoded its own output")
	}
}

func TestFitKeepsPNGAsPNG(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3000, 1000))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	out, mt, err := Fit(b.Bytes(), 1500)
	if err != nil {
		t.Fatal(err)
	}
	if w, h, format := dims(t, out); w != 1500 || h != 500 || format != "png" || mt != "image/png" {
		t.Fatalf("got %d×%d %s, want 1500×500 png", w, h, format)
	}
}

func TestFitRefusesWhatIsNoImage(t *testing.T) {
	if _, _, err := Fit([]byte("%PDF-1.7\n"), 2048); !errors.Is(err, ErrNotImage) {
		t.Fatalf("err = %v, want ErrNotImage", err)
	}
	// A header claiming 50000×50000 pixels is refused before decoding.
	var b bytes.Buffer
	b.Write([]byte("\x89PNG\r\n\x1a\n"))
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, 50000)
	binary.BigEndian.PutUint32(ihdr[4:], 50000)
	ihdr[8], ihdr[9] = 8, 6
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	b.WriteString("IHDR")
	b.Write(ihdr)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("IHDR"), ihdr...)))
	if _, _, err := Fit(b.Bytes(), 2048); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// BenchmarkFit12MP prepares a 12-megapixel phone photo (4032×3024 JPEG)
// for a model: decode, scale to 2048 px, re-encode.
func BenchmarkFit12MP(b *testing.B) {
	in := llmtest.WithEXIF(llmtest.Photo(4032, 3024), 1)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Fit(in, 2048); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitAlreadyFitted is the cost on every later turn: Fit's own
// output passes on after its header is read.
func BenchmarkFitAlreadyFitted(b *testing.B) {
	in, _, err := Fit(llmtest.Photo(4032, 3024), 2048)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Fit(in, 2048); err != nil {
			b.Fatal(err)
		}
	}
}

// The cache answers an image fitted before with the same bytes, without
// fitting it again, and keeps within its bound.
func TestCacheFitsOnce(t *testing.T) {
	c := NewCache(1 << 20)
	photo := llmtest.Photo(3000, 2000)
	first, mt, err := c.Fit(photo, 1024)
	if err != nil || mt != "image/jpeg" {
		t.Fatal(mt, err)
	}
	again, _, _ := c.Fit(photo, 1024)
	if &first[0] != &again[0] {
		t.Error("the second Fit of the same image was not the cached result")
	}
	other, _, _ := c.Fit(photo, 512)
	if len(other) >= len(first) {
		t.Error("a smaller bound was answered with the larger fit")
	}
	for i := range 20 {
		if _, _, err := c.Fit(llmtest.Photo(900+i, 600), 1024); err != nil {
			t.Fatal(err)
		}
	}
	if again, _, _ := c.Fit(photo, 1024); &again[0] == &first[0] {
		t.Error("the cache kept an old image past its bound")
	}
}

// BenchmarkFitPhoto is a 12-megapixel photo fitted to 2048 px, every
// time (before the cache, every turn with it in view paid this).
func BenchmarkFitPhoto(b *testing.B) {
	photo := llmtest.Photo(4000, 3000)
	for b.Loop() {
		if _, _, err := Fit(photo, 2048); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedFitPhoto is the same photo on a later turn: hashed and
// found.
func BenchmarkCachedFitPhoto(b *testing.B) {
	photo := llmtest.Photo(4000, 3000)
	c := NewCache(0)
	if _, _, err := c.Fit(photo, 2048); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := c.Fit(photo, 2048); err != nil {
			b.Fatal(err)
		}
	}
}
