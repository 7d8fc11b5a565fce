// Package attach tells what a file is from its bytes, never from its
// name: the media type, an image's size, an Ogg Opus recording's length.
package attach

import (
	"bytes"
	"encoding/binary"
	"image"
	_ "image/gif" // registered for image.DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"time"
)

// HeadSize is how many leading bytes Sniff is given: enough for
// net/http's sniffing (512) and for a JPEG's size after a large EXIF
// block in most photos.
const HeadSize = 64 << 10

// Info is what the leading bytes of a file tell.
type Info struct {
	MediaType     string
	Width, Height int // images whose header says; 0 otherwise
}

// Sniff tells the media type of a file from its first bytes (up to
// HeadSize of them): net/http.DetectContentType, refined for the types
// it leaves generic (Ogg audio, HEIC photos), and an image's size.
func Sniff(head []byte) Info {
	info := Info{MediaType: http.DetectContentType(head)}
	switch {
	case info.MediaType == "application/ogg":
		info.MediaType = oggType(head)
	case info.MediaType == "application/octet-stream" && isHEIC(head):
		info.MediaType = "image/heic"
	case info.MediaType == "application/octet-stream" && isADTS(head):
		info.MediaType = "audio/aac"
	}
	switch info.MediaType {
	case "image/png", "image/jpeg", "image/gif":
		if c, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
			info.Width, info.Height = c.Width, c.Height
		}
	case "image/webp":
		info.Width, info.Height = webpSize(head)
	}
	return info
}

// isADTS reports whether head starts two AAC ADTS frames (a Signal or
// phone voice note): the 12-bit sync word, layer 0, and a frame length
// that lands on the next sync word.
func isADTS(head []byte) bool {
	if len(head) < 7 || head[0] != 0xFF || head[1]&0xF6 != 0xF0 {
		return false
	}
	n := int(head[3]&0x03)<<11 | int(head[4])<<3 | int(head[5])>>5
	if n < 7 {
		return false
	}
	if n+2 > len(head) {
		return n <= 8192 // the next frame is past what was read
	}
	return head[n] == 0xFF && head[n+1]&0xF6 == 0xF0
}

// oggType looks at the first page's first packet: the codec's header.
func oggType(head []byte) string {
	if len(head) < 27 {
		return "application/ogg"
	}
	body := head[min(len(head), 27+int(head[26])):]
	switch {
	case bytes.HasPrefix(body, []byte("OpusHead")), bytes.HasPrefix(body, []byte("\x01vorbis")),
		bytes.HasPrefix(body, []byte("fLaC")), bytes.HasPrefix(body, []byte("Speex")):
		return "audio/ogg"
	case bytes.HasPrefix(body, []byte("\x80theora")):
		return "video/ogg"
	}
	return "application/ogg"
}

// isHEIC reads the ISO media file's ftyp box for an HEIF brand of HEVC.
func isHEIC(head []byte) bool {
	if len(head) < 16 || string(head[4:8]) != "ftyp" {
		return false
	}
	size := int(binary.BigEndian.Uint32(head[:4]))
	if size < 16 || size > len(head) {
		size = min(len(head), 64)
	}
	for i := 8; i+4 <= size; i += 4 {
		if i == 12 {
			continue // the minor version
		}
		switch string(head[i : i+4]) {
		case "heic", "heix", "heim", "heis", "hevc", "hevx":
			return true
		}
	}
	return false
}

// webpSize reads a WebP's canvas size from its first chunk: VP8X
// (extended), VP8 (lossy) or VP8L (lossless).
func webpSize(b []byte) (w, h int) {
	if len(b) < 30 {
		return 0, 0
	}
	u24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return u24(b[24:]) + 1, u24(b[27:]) + 1
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0
		}
		return int(binary.LittleEndian.Uint16(b[26:]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:]) & 0x3fff)
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0
		}
		bits := binary.LittleEndian.Uint32(b[21:])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1
	}
	return 0, 0
}

// OggDuration measures an Ogg Opus stream as it is written to it, page
// by page, keeping nothing but the page header being read: the length
// is the last page's granule position (48 kHz samples) less the
// pre-skip its OpusHead gives. Anything that is not Ogg Opus measures 0.
type OggDuration struct {
	hdr      [27 + 255]byte
	have     int   // bytes of hdr read
	need     int   // bytes of hdr wanted: 27, then 27 + segments
	skip     int64 // body bytes left of the current page
	opus     bool
	preSkip  int64
	granule  int64
	pages    int
	headBuf  []byte // the first page's body, up to 19 bytes (OpusHead)
	headWant int
	broken   bool
}

// Write walks the pages in p; it never fails.
func (o *OggDuration) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !o.broken {
		if o.skip > 0 {
			k := int(min(o.skip, int64(len(p))))
			if o.headWant > 0 {
				take := min(k, o.headWant)
				o.headBuf = append(o.headBuf, p[:take]...)
				o.headWant -= take
				if o.headWant == 0 {
					o.readOpusHead()
				}
			}
			o.skip -= int64(k)
			p = p[k:]
			continue
		}
		if o.need == 0 {
			o.need = 27
		}
		k := copy(o.hdr[o.have:o.need], p)
		o.have += k
		p = p[k:]
		if o.have < o.need {
			continue
		}
		if o.need == 27 {
			if string(o.hdr[:4]) != "OggS" {
				o.broken = true
				break
			}
			o.need = 27 + int(o.hdr[26])
			if o.need > 27 {
				continue
			}
		}
		o.page()
	}
	return n, nil
}

// page takes in a whole page header.
func (o *OggDuration) page() {
	var body int64
	for _, seg := range o.hdr[27:o.need] {
		body += int64(seg)
	}
	if g := int64(binary.LittleEndian.Uint64(o.hdr[6:14])); g != -1 && o.pages > 0 {
		o.granule = g
	}
	if o.pages == 0 {
		o.headWant = int(min(body, 19))
	}
	o.pages++
	o.skip, o.have, o.need = body, 0, 27
	if body == 0 && o.headWant > 0 {
		o.headWant = 0
		o.readOpusHead()
	}
}

func (o *OggDuration) readOpusHead() {
	if len(o.headBuf) >= 12 && string(o.headBuf[:8]) == "OpusHead" {
		o.opus = true
		o.preSkip = int64(binary.LittleEndian.Uint16(o.headBuf[10:12]))
	}
	o.headBuf = nil
}

// Duration is the length measured so far; 0 if the stream is not Ogg
// Opus or did not parse.
func (o *OggDuration) Duration() time.Duration {
	if o.broken || !o.opus || o.granule <= o.preSkip {
		return 0
	}
	return time.Duration(o.granule-o.preSkip) * time.Second / 48000
}
