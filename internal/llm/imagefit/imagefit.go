// Package imagefit prepares an image for a model: scaled down so its
// longest side is within the model's bound, and stripped of metadata (EXIF
// location above all) before it leaves the machine.
//
// Fit is idempotent and cheap on its own output: an image that already fits
// and carries no metadata is returned as it is after reading its header, so
// a provider can call it on every turn.
package imagefit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decode GIF
	"image/jpeg"
	"image/png"

	_ "golang.org/x/image/webp" // decode WebP, which phones and browsers send
)

// MaxPixels bounds the pixels Fit will decode: a small file can claim a
// huge canvas, and decoding it would hold gigabytes.
const MaxPixels = 100_000_000

// JPEGQuality is used for re-encoded photos.
const JPEGQuality = 85

// ErrTooLarge is returned for an image claiming more than MaxPixels.
var ErrTooLarge = errors.New("image has too many pixels to prepare for a model")

// ErrNotImage is returned for bytes that are no image this package decodes.
var ErrNotImage = errors.New("not an image in a format models take (JPEG, PNG, GIF, WebP)")

// Fit returns data as the model should get it: longest side at most
// maxSide pixels (maxSide <= 0: no bound), no metadata. JPEG stays JPEG and
// PNG stays PNG; GIF and WebP become PNG when they must be re-encoded. The
// result's media type is returned with it.
func Fit(data []byte, maxSide int) ([]byte, string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, "", fmt.Errorf("%w: %d×%d", ErrTooLarge, cfg.Width, cfg.Height)
	}
	fits := maxSide <= 0 || max(cfg.Width, cfg.Height) <= maxSide
	if fits && !hasMetadata(format, data) {
		return data, "image/" + format, nil
	}

	orientation := 1
	if format == "jpeg" {
		orientation = jpegOrientation(data)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("decode %s: %w", format, err)
	}
	img := src
	if !fits {
		img = scale(src, maxSide)
	}
	// Re-encoding from pixels drops the metadata, including the EXIF
	// orientation: turn the pixels the way that tag said first.
	img = orient(img, orientation)

	var out bytes.Buffer
	switch format {
	case "jpeg":
		err = jpeg.Encode(&out, img, &jpeg.Options{Quality: JPEGQuality})
	case "gif":
		if fits {
			// A GIF has no EXIF; only its comments would be kept.
			return data, "image/gif", nil
		}
		err = png.Encode(&out, img)
		format = "png"
	default:
		err = png.Encode(&out, img)
		format = "png"
	}
	if err != nil {
		return nil, "", fmt.Errorf("encode %s: %w", format, err)
	}
	return out.Bytes(), "image/" + format, nil
}

// hasMetadata reports whether an image of format carries anything beyond
// its pixels that could say where or by whom it was taken.
func hasMetadata(format string, data []byte) bool {
	switch format {
	case "jpeg":
		return jpegHasMetadata(data)
	case "png":
		return pngHasMetadata(data)
	case "gif":
		return false
	default:
		return true // WebP and anything else: re-encode rather than parse
	}
}

// jpegHasMetadata walks the segments before the scan: APP1 (EXIF, XMP),
// APP13 (IPTC) and the other application segments but APP0 (JFIF) and
// APP14 (Adobe colour transform, needed to decode), and comments, count.
func jpegHasMetadata(data []byte) bool {
	i := 2 // after SOI
	for i+4 <= len(data) {
		if data[i] != 0xFF {
			return true // not a segment where one should be: play safe
		}
		marker := data[i+1]
		if marker == 0xDA || marker == 0xD9 { // start of scan, end of image
			return false
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if (marker >= 0xE1 && marker <= 0xEF && marker != 0xEE) || marker == 0xFE {
			return true
		}
		i += 2 + n
	}
	return true
}

// pngHasMetadata looks for the chunks that carry EXIF or text.
func pngHasMetadata(data []byte) bool {
	i := 8 // after the signature
	for i+8 <= len(data) {
		n := int(binary.BigEndian.Uint32(data[i:]))
		switch string(data[i+4 : i+8]) {
		case "eXIf", "tEXt", "zTXt", "iTXt", "tIME":
			return true
		case "IDAT", "IEND":
			return false // metadata after the pixels is rare; the encoder puts it before
		}
		i += 12 + n
	}
	return true
}

// jpegOrientation reads the EXIF orientation tag (1–8), 1 if absent.
func jpegOrientation(data []byte) int {
	i := 2
	for i+4 <= len(data) && data[i] == 0xFF {
		marker := data[i+1]
		if marker == 0xDA || marker == 0xD9 {
			break
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		end := min(i+2+n, len(data))
		if seg := data[i+4 : end]; marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int(bo.Uint32(t[4:]))
	if ifd+2 > len(t) {
		return 1
	}
	count := int(bo.Uint16(t[ifd:]))
	for k := range count {
		e := ifd + 2 + 12*k
		if e+12 > len(t) {
			break
		}
		if bo.Uint16(t[e:]) == 0x0112 {
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			break
		}
	}
	return 1
}

// orient returns img turned as EXIF orientation o says it should be shown.
func orient(img image.Image, o int) image.Image {
	if o <= 1 || o > 8 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range h {
		for x := range w {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = w-1-x, y
			case 3:
				dx, dy = w-1-x, h-1-y
			case 4:
				dx, dy = x, h-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = h-1-y, x
			case 7:
				dx, dy = h-1-y, w-1-x
			case 8:
				dx, dy = y, w-1-x
			}
			if rgba, ok := img.(*image.RGBA); ok {
				copy(dst.Pix[dst.PixOffset(dx, dy):][:4], rgba.Pix[rgba.PixOffset(b.Min.X+x, b.Min.Y+y):][:4])
			} else {
				dst.Set(dx, dy, img.At(b.Min.X+x, b.Min.Y+y))
			}
		}
	}
	return dst
}
