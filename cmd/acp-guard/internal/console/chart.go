package console

import (
	"sort"
	"time"

	"github.com/acp-guard/acp-guard/presence"
)

// The last hour's ProviderErrors, from the live sessions' presence
// records (each counts its own per code and class in 5-minute slots):
// one row per agent, code and class, with a small bar chart of the
// hour's slots, drawn server-side as SVG (rect sizes are attributes, so
// the page's Content-Security-Policy needs no inline style).

// chartBar is one slot's bar, in the SVG's units.
type chartBar struct {
	X, Y, W, H int
	N          int
	From       time.Time
}

type errorRow struct {
	Agent, Code, Class string
	Total              int
	Bars               []chartBar
}

type errorChart struct {
	Rows  []errorRow
	Total int
	Max   int // the largest slot count over every row (the bars' scale)
	From  time.Time
	W, H  int // the SVG's size
}

const (
	barW, barGap, chartH = 8, 2, 24
)

func chartErrors(recs []presence.Record, now time.Time) errorChart {
	first := presence.SlotOf(now) - int64(presence.Slots) + 1
	type key struct{ agent, code, class string }
	counts := map[key][]int{}
	for _, r := range recs {
		for _, e := range r.Errors {
			if e.Slot < first || e.Slot >= first+int64(presence.Slots) || e.N <= 0 {
				continue
			}
			k := key{r.Agent, e.Code, e.Class}
			if counts[k] == nil {
				counts[k] = make([]int, presence.Slots)
			}
			counts[k][e.Slot-first] += e.N
		}
	}
	c := errorChart{From: presence.SlotStart(first), W: presence.Slots * (barW + barGap), H: chartH}
	for _, n := range counts {
		for _, v := range n {
			c.Max = max(c.Max, v)
		}
	}
	for k, n := range counts {
		row := errorRow{Agent: k.agent, Code: k.code, Class: k.class}
		for i, v := range n {
			row.Total += v
			h := 0
			if v > 0 {
				h = max(1, v*chartH/c.Max)
			}
			row.Bars = append(row.Bars, chartBar{X: i * (barW + barGap), Y: chartH - h, W: barW, H: h, N: v,
				From: presence.SlotStart(first + int64(i))})
		}
		c.Total += row.Total
		c.Rows = append(c.Rows, row)
	}
	sort.Slice(c.Rows, func(i, j int) bool {
		a, b := c.Rows[i], c.Rows[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Class < b.Class
	})
	return c
}
