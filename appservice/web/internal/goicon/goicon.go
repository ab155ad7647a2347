// Package goicon draws Go's home screen icon: "Go" in white on the application's blue,
// square and full-bleed, so that it serves both as an ordinary icon and as a maskable one
// (the glyphs keep inside the central circle of 40 % radius that every mask shows). The
// PNGs under static/go/ are its output (go generate in appservice/web); a test checks
// that they still are.
package goicon

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Brand is the icon's background, the application's --brand colour, and the manifest's
// theme colour.
var Brand = color.NRGBA{0x1d, 0x4e, 0x89, 0xff}

// Sizes are the icons the manifest names.
var Sizes = []int{192, 512}

// samples is the supersampling of one pixel per axis: edges are smooth at any size.
const samples = 4

// PNG is the icon of size×size pixels, PNG-encoded. It is the same bytes on every run.
func PNG(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			in := 0
			for sy := 0; sy < samples; sy++ {
				for sx := 0; sx < samples; sx++ {
					u := (float64(x) + (float64(sx)+0.5)/samples) / float64(size)
					v := (float64(y) + (float64(sy)+0.5)/samples) / float64(size)
					if glyph(u, v) {
						in++
					}
				}
			}
			img.SetNRGBA(x, y, blend(Brand, color.NRGBA{0xff, 0xff, 0xff, 0xff}, in, samples*samples))
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		panic(err) // encoding into memory does not fail
	}
	return b.Bytes()
}

// blend is bg covered by fg in n of total samples.
func blend(bg, fg color.NRGBA, n, total int) color.NRGBA {
	mix := func(a, b uint8) uint8 { return uint8((int(a)*(total-n) + int(b)*n + total/2) / total) }
	return color.NRGBA{mix(bg.R, fg.R), mix(bg.G, fg.G), mix(bg.B, fg.B), 0xff}
}

// glyph reports whether the point (u, v) of the unit square, v downwards, is in "Go".
func glyph(u, v float64) bool {
	// G: a ring open at the upper right, with a bar in from the right at its middle.
	const gx, gy, gOut, gIn = 0.37, 0.5, 0.2, 0.13
	dx, dy := u-gx, gy-v // dy upwards
	r := math.Hypot(dx, dy)
	if r >= gIn && r <= gOut {
		a := math.Atan2(dy, dx) * 180 / math.Pi
		if !(a > 2 && a < 50) {
			return true
		}
	}
	if dy >= -0.035 && dy <= 0.035 && dx >= 0.03 && dx <= gOut-0.002 {
		return true
	}
	// o: a smaller ring, on the G's baseline.
	const ox, oy, oOut, oIn = 0.695, 0.58, 0.12, 0.057
	r = math.Hypot(u-ox, v-oy)
	return r >= oIn && r <= oOut
}
