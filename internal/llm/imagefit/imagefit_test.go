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
)

// photo is a w×h JPEG with a gradient, so it compresses like a picture.
func photo(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gpsPlace is the text the test's EXIF carries in its GPS IFD.
const gpsPlace = "BATON-GPS-52.5200N"

// withEXIF inserts an APP1 EXIF segment after the JPEG's SOI, as a phone
// camera writes one: IFD0 with the orientation and a GPS IFD pointer, and a
// GPS IFD whose latitude reference is followed by gpsPlace as a
// GPSAreaInformation value.
func withEXIF(jpg []byte, orientation uint16) []byte {
	le := binary.LittleEndian
	var t bytes.Buffer
	t.WriteString("II*\x00")
	_ = binary.Write(&t, le, uint32(8)) // IFD0 at 8
	// IFD0: 2 entries (8 + 2 + 24 + 4 = 38): GPS IFD at 38.
	_ = binary.Write(&t, le, uint16(2))
	entry := func(tag, typ uint16, count, value uint32) {
		_ = binary.Write(&t, le, tag)
		_ = binary.Write(&t, le, typ)
		_ = binary.Write(&t, le, count)
		_ = binary.Write(&t, le, value)
	}
	entry(0x0112, 3, 1, uint32(orientation))
	entry(0x8825, 4, 1, 38)
	_ = binary.Write(&t, le, uint32(0)) // no next IFD
	// GPS IFD: 2 entries (38 + 2 + 24 + 4 = 68): area text at 68.
	_ = binary.Write(&t, le, uint16(2))
	entry(0x0001, 2, 2, uint32('N'))            // GPSLatitudeRef "N"
	entry(0x001C, 7, uint32(len(gpsPlace)), 68) // GPSAreaInformation
	_ = binary.Write(&t, le, uint32(0))
	t.WriteString(gpsPlace)

	seg := append([]byte("Exif\x00\x00"), t.Bytes()...)
	var out bytes.Buffer
	out.Write(jpg[:2])
	out.Write([]byte{0xFF, 0xE1})
	_ = binary.Write(&out, binary.BigEndian, uint16(len(seg)+2))
	out.Write(seg)
	out.Write(jpg[2:])
	return out.Bytes()
}

func dims(t *testing.T, data []byte) (int, int, string) {
	t.Helper()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("result is no image: %v", err)
	}
	return cfg.Width, cfg.Height, format
}

func TestFitScalesALargePhotoToTheBound(t *testing.T) {
	out, mt, err := Fit(photo(t, 4000, 3000), 2048)
	if err != nil {
		t.Fatal(err)
	}
	w, h, format := dims(t, out)
	if w != 2048 || h != 1536 || format != "jpeg" || mt != "image/jpeg" {
		t.Fatalf("got %d×%d %s (%s), want 2048×1536 jpeg", w, h, format, mt)
	}
}

func TestFitStripsEXIFLocation(t *testing.T) {
	in := withEXIF(photo(t, 64, 48), 1)
	if !bytes.Contains(in, []byte(gpsPlace)) {
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
	if bytes.Contains(out, []byte(gpsPlace)) || bytes.Contains(out, []byte("Exif\x00")) {
		t.Fatal("EXIF (with its GPS location) survived Fit")
	}
	if w, h, _ := dims(t, out); w != 64 || h != 48 {
		t.Fatalf("got %d×%d, want 64×48", w, h)
	}
	// Scaled, too.
	out, _, err = Fit(withEXIF(photo(t, 3000, 2000), 1), 1568)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(gpsPlace)) {
		t.Fatal("EXIF survived scaling")
	}
}

func TestFitTurnsAPhotoAsItsEXIFSays(t *testing.T) {
	// Orientation 6: the camera was held upright, the pixels lie on their side.
	out, _, err := Fit(withEXIF(photo(t, 400, 300), 6), 2048)
	if err != nil {
		t.Fatal(err)
	}
	if w, h, _ := dims(t, out); w != 300 || h != 400 {
		t.Fatalf("got %d×%d, want 300×400 (turned upright)", w, h)
	}
}

func TestFitLeavesACleanImageThatFitsAsItIs(t *testing.T) {
	in := photo(t, 640, 480)
	out, mt, err := Fit(in, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if &out[0] != &in[0] || mt != "image/jpeg" {
		t.Fatal("a clean JPEG within the bound was re-encoded")
	}
	// Fit's own output passes through again untouched.
	once, _, _ := Fit(photo(t, 4000, 3000), 2048)
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
	in := withEXIF(photo(b, 4032, 3024), 1)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Fit(in, 2048); err != nil {
			b.Fatal(err)
		}
	}
}
