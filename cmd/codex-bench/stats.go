package main

import (
	"math"
	"sort"
	"time"
)

// Latency summarises latency samples in milliseconds.
type Latency struct {
	N      int       `json:"n"`
	Errors int       `json:"errors,omitempty"`
	Min    float64   `json:"min_ms"`
	P50    float64   `json:"p50_ms"`
	P95    float64   `json:"p95_ms"`
	Max    float64   `json:"max_ms"`
	Rounds []float64 `json:"round_p50_ms,omitempty"` // p50 of each interleaved round
	Raw    []float64 `json:"raw_ms,omitempty"`       // every measured sample, in order
	Error  string    `json:"error,omitempty"`
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round3 keeps three decimals.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// quantile returns the nearest-rank quantile q of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// median of unsorted values (the mean of the middle two for even counts).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summarize builds a Latency from raw millisecond samples.
func summarize(raw []float64) *Latency {
	l := &Latency{N: len(raw)}
	for _, v := range raw {
		l.Raw = append(l.Raw, round3(v))
	}
	if len(raw) == 0 {
		return l
	}
	s := append([]float64(nil), raw...)
	sort.Float64s(s)
	l.Min = round3(s[0])
	l.P50 = round3(quantile(s, 0.50))
	l.P95 = round3(quantile(s, 0.95))
	l.Max = round3(s[len(s)-1])
	return l
}

// p50 of unsorted values (nearest rank).
func p50(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return quantile(s, 0.5)
}
