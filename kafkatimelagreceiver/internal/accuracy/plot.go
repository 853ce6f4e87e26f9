package accuracy

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
)

// Colors are the plot's colors by method, in Methods order; the truth is
// drawn in truthColor under them.
var (
	Colors = []color.RGBA{
		{0x1f, 0x5f, 0xd0, 0xff}, // blue
		{0x2c, 0xa0, 0x2c, 0xff}, // green
		{0xd6, 0x27, 0x28, 0xff}, // red
		{0xff, 0x7f, 0x0e, 0xff}, // orange
		{0x94, 0x67, 0xbd, 0xff}, // purple
		{0x17, 0xbe, 0xcf, 0xff}, // cyan
		{0x8c, 0x56, 0x4b, 0xff}, // brown
		{0xe3, 0x77, 0xc2, 0xff}, // pink
		{0xbc, 0xbd, 0x22, 0xff}, // olive
		{0x40, 0x40, 0x40, 0xff}, // black
		{0x00, 0x80, 0x80, 0xff}, // teal
	}
	ColorNames = []string{"blue", "green", "red", "orange", "purple", "cyan", "brown", "pink", "olive", "black", "teal"}
	truthColor = color.RGBA{0xa0, 0xa0, 0xa0, 0xff}
	axisColor  = color.RGBA{0x30, 0x30, 0x30, 0xff}
	gridColor  = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
)

const (
	plotWidth, plotHeight = 960, 400
	marginLeft            = 70
	marginRight           = 20
	marginTop             = 16
	marginBottom          = 36
)

// Plot draws the true time lag (grey, thick) and each series' estimates,
// of the first group, over the stretch [from, to) as a PNG: hours since from across, seconds
// up, from 0 to a little above the largest true time lag (estimates beyond
// are drawn at the top edge). Each method is numbered in the legend (top
// right) from 1, in series order. The same series give the same bytes.
func Plot(series []Series, from, to int64) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, plotWidth, plotHeight))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	top := 0.0
	for _, p := range series[0].Points {
		if p.Group == 0 && p.Partition == 0 && p.At >= from && p.At < to {
			top = max(top, p.Truth)
		}
	}
	yStep := niceStep(max(top*1.15, 1) / 5)
	yMax := yStep * math.Ceil(max(top*1.15, 1)/yStep)
	x0, x1 := marginLeft, plotWidth-marginRight
	y0, y1 := plotHeight-marginBottom, marginTop
	xOf := func(at int64) int {
		return x0 + int(float64(at-from)/float64(to-from)*float64(x1-x0))
	}
	yOf := func(v float64) int {
		return y0 - int(math.Round(min(v, yMax)/yMax*float64(y0-y1)))
	}
	for k := 0; float64(k)*yStep <= yMax+yStep/2; k++ {
		v := float64(k) * yStep
		y := yOf(v)
		hline(img, x0, x1, y, gridColor)
		label := strconv.FormatFloat(v, 'f', -1, 64) + "s"
		text(img, x0-6-textWidth(label), y-5, label, axisColor)
	}
	// Hours across, or minutes over a stretch of two hours or less.
	unit, suffix := hour, "h"
	if to-from <= 2*hour {
		unit, suffix = minute, "m"
	}
	span := float64(to-from) / float64(unit)
	xStep := niceStep(span / 8)
	for k := 0; float64(k)*xStep <= span+xStep/2; k++ {
		v := float64(k) * xStep
		x := xOf(from + int64(v*float64(unit)))
		vline(img, x, y1, y0, gridColor)
		label := strconv.FormatFloat(v, 'f', -1, 64) + suffix
		text(img, x-textWidth(label)/2, y0+8, label, axisColor)
	}
	hline(img, x0, x1, y0, axisColor)
	vline(img, x0, y1, y0, axisColor)
	polyline(img, series[0].Points, from, to, xOf, yOf, func(p Point) (float64, bool) { return p.Truth, true }, truthColor, 5)
	for i := len(series) - 1; i >= 0; i-- {
		polyline(img, series[i].Points, from, to, xOf, yOf, func(p Point) (float64, bool) { return p.Estimate, p.Estimated }, Colors[i%len(Colors)], 1)
	}
	for i := range series {
		x, y := x1-40*(len(series)-i), y1+4
		fill(img, image.Rect(x, y+3, x+16, y+6), Colors[i%len(Colors)])
		text(img, x+20, y, fmt.Sprint(i+1), axisColor)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode plot: %w", err)
	}
	return buf.Bytes(), nil
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func polyline(img *image.RGBA, points []Point, from, to int64, xOf func(int64) int, yOf func(float64) int, value func(Point) (float64, bool), c color.RGBA, width int) {
	havePrev := false
	var px, py int
	for _, p := range points {
		if p.Group != 0 || p.Partition != 0 || p.At < from || p.At >= to {
			continue
		}
		v, ok := value(p)
		if !ok {
			havePrev = false
			continue
		}
		x, y := xOf(p.At), yOf(v)
		if havePrev {
			line(img, px, py, x, y, c, width)
		} else {
			line(img, x, y, x, y, c, width)
		}
		px, py, havePrev = x, y, true
	}
}

// line draws a straight line width pixels thick (Bresenham).
func line(img *image.RGBA, xa, ya, xb, yb int, c color.RGBA, width int) {
	dx, dy := abs64(xb-xa), -abs64(yb-ya)
	sx, sy := sign(xb-xa), sign(yb-ya)
	e := dx + dy
	for {
		fill(img, image.Rect(xa-width/2, ya-width/2, xa-width/2+width, ya-width/2+width), c)
		if xa == xb && ya == yb {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			xa += sx
		} else {
			e += dx
			ya += sy
		}
	}
}

func abs64(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func hline(img *image.RGBA, xa, xb, y int, c color.RGBA) {
	fill(img, image.Rect(xa, y, xb+1, y+1), c)
}

func vline(img *image.RGBA, x, ya, yb int, c color.RGBA) {
	fill(img, image.Rect(x, ya, x+1, yb+1), c)
}

// glyphs is a 3x5 pixel font of what the axes and legend write: each row
// of a glyph is three bits, the leftmost the highest.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 3, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 2, 2},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7}, '.': {0, 0, 0, 0, 2}, 's': {0, 3, 6, 1, 6},
	'h': {4, 4, 7, 5, 5}, 'm': {0, 6, 7, 5, 5}, 'e': {0, 7, 7, 4, 7}, '+': {0, 2, 7, 2, 0}, '-': {0, 0, 7, 0, 0},
}

// glyphScale is how many pixels a glyph's pixel takes.
const glyphScale = 2

func textWidth(s string) int { return len(s) * 4 * glyphScale }

func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g := glyphs[r]
		for row := range 5 {
			for col := range 3 {
				if g[row]&(4>>col) != 0 {
					fill(img, image.Rect(x+col*glyphScale, y+row*glyphScale, x+(col+1)*glyphScale, y+(row+1)*glyphScale), c)
				}
			}
		}
		x += 4 * glyphScale
	}
}
