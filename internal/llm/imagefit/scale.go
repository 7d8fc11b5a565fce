package imagefit

import (
	"image"
	"image/color"

	"golang.org/x/image/draw"
)

// scale returns src scaled down so its longest side is maxSide, each
// output pixel the average of the source pixels it covers (an area filter:
// what downscaling wants, and no aliasing).
//
// It is written out rather than taken from x/image/draw because that
// package's kernel scalers keep a float64 buffer of output width × source
// height (~200 MB for a 12-megapixel photo), and its approximate one
// samples four pixels per output pixel and shimmers. This one holds one row
// of sums beside the output.
func scale(src image.Image, maxSide int) image.Image {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dw, dh := sw, sh
	if sw >= sh {
		dw, dh = maxSide, max(1, sh*maxSide/sw)
	} else {
		dw, dh = max(1, sw*maxSide/sh), maxSide
	}

	var px func(x, y int) (r, g, b, a uint32) // 8-bit channels, x and y from 0
	var dst interface {
		image.Image
		SetRGBA(x, y int, c color.RGBA)
	}
	switch s := src.(type) {
	case *image.YCbCr:
		px = func(x, y int) (uint32, uint32, uint32, uint32) {
			yi := s.YOffset(b.Min.X+x, b.Min.Y+y)
			ci := s.COffset(b.Min.X+x, b.Min.Y+y)
			r, g, bl := color.YCbCrToRGB(s.Y[yi], s.Cb[ci], s.Cr[ci])
			return uint32(r), uint32(g), uint32(bl), 255
		}
		dst = image.NewRGBA(image.Rect(0, 0, dw, dh))
	case *image.RGBA:
		px = func(x, y int) (uint32, uint32, uint32, uint32) {
			p := s.Pix[s.PixOffset(b.Min.X+x, b.Min.Y+y):]
			return uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
		}
		dst = image.NewRGBA(image.Rect(0, 0, dw, dh))
	default:
		// Anything else (paletted, grey, 16-bit, alpha) goes through NRGBA,
		// which keeps transparency as PNG stores it.
		n, ok := src.(*image.NRGBA)
		if !ok {
			n = image.NewNRGBA(image.Rect(0, 0, sw, sh))
			draw.Draw(n, n.Bounds(), src, b.Min, draw.Src)
			b = n.Bounds()
		}
		px = func(x, y int) (uint32, uint32, uint32, uint32) {
			p := n.Pix[n.PixOffset(b.Min.X+x, b.Min.Y+y):]
			return uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
		}
		dst = nrgbaSetter{image.NewNRGBA(image.Rect(0, 0, dw, dh))}
	}

	// Each source column belongs to exactly one output column.
	col := make([]int, sw)
	for x := range sw {
		col[x] = x * dw / sw
	}
	colCount := make([]uint32, dw)
	for _, c := range col {
		colCount[c]++
	}
	sums := make([]uint32, 4*dw)
	sy := 0
	for dy := range dh {
		clear(sums)
		rows := uint32(0)
		for ; sy < sh && sy*dh/sh == dy; sy++ {
			rows++
			for x := range sw {
				r, g, bl, a := px(x, sy)
				s := sums[4*col[x]:]
				s[0] += r
				s[1] += g
				s[2] += bl
				s[3] += a
			}
		}
		for dx := range dw {
			n := max(1, rows*colCount[dx])
			s := sums[4*dx:]
			dst.SetRGBA(dx, dy, color.RGBA{uint8(s[0] / n), uint8(s[1] / n), uint8(s[2] / n), uint8(s[3] / n)})
		}
	}
	return dst
}

// nrgbaSetter stores averaged non-premultiplied values as they are.
type nrgbaSetter struct{ *image.NRGBA }

func (n nrgbaSetter) SetRGBA(x, y int, c color.RGBA) {
	n.SetNRGBA(x, y, color.NRGBA(c))
}
