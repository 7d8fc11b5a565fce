package llmtest

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
)

// Images for tests of what reaches a model: a photo, and the EXIF segment a
// phone camera adds (with a location in it).

// Photo is a w×h JPEG: a gradient with sensor-like grain, so it is about
// the size a phone camera writes (a 12-megapixel one ~3 MB).
func Photo(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := uint32(1)
	for y := range h {
		for x := range w {
			seed = seed*1664525 + 1013904223 // a fixed sequence: same photo every time
			grain := uint8(seed>>24) & 15
			p := img.Pix[img.PixOffset(x, y):]
			p[0], p[1], p[2], p[3] = uint8(x/16)+grain, uint8(y/12)+grain, uint8((x+y)/24)+grain, 255
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		panic("llmtest: encode photo: " + err.Error())
	}
	return b.Bytes()
}

// GPSPlace is the text WithEXIF's EXIF carries in its GPS IFD.
const GPSPlace = "BATON-GPS-52.5200N"

// WithEXIF inserts an APP1 EXIF segment after the JPEG's SOI, as a phone
// camera writes one: IFD0 with the orientation and a GPS IFD pointer, and a
// GPS IFD whose latitude reference is followed by GPSPlace as a
// GPSAreaInformation value.
func WithEXIF(jpg []byte, orientation uint16) []byte {
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
	entry(0x001C, 7, uint32(len(GPSPlace)), 68) // GPSAreaInformation
	_ = binary.Write(&t, le, uint32(0))
	t.WriteString(GPSPlace)

	seg := append([]byte("Exif\x00\x00"), t.Bytes()...)
	var out bytes.Buffer
	out.Write(jpg[:2])
	out.Write([]byte{0xFF, 0xE1})
	_ = binary.Write(&out, binary.BigEndian, uint16(len(seg)+2))
	out.Write(seg)
	out.Write(jpg[2:])
	return out.Bytes()
}
