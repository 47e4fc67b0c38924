package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Zipf samples ranks 0..n-1 with P(k) ∝ 1/(k+1)^s: rank 0 is the hottest.
// s = 0 is uniform. Any s ≥ 0 works (math/rand's Zipf needs s > 1, and hot
// keys in practice have s around 0.6–1.2), in O(1) per sample and O(1)
// memory, by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-
// inversion to generate variates from monotone discrete distributions",
// 1996), as in Apache Commons' ZipfRejectionInversionSampler.
type Zipf struct {
	n   int
	s   float64
	hX1 float64 // H(1.5) − 1
	hN  float64 // H(n + 0.5)
	thr float64 // 2 − H⁻¹(H(2.5) − h(2)): acceptance shortcut
}

// NewZipf returns a sampler over n ≥ 1 ranks with exponent s ≥ 0.
func NewZipf(n int, s float64) (*Zipf, error) {
	if n < 1 {
		return nil, fmt.Errorf("zipf: n must be ≥ 1, got %d", n)
	}
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("zipf: exponent must be ≥ 0, got %g", s)
	}
	z := &Zipf{n: n, s: s}
	if s > 0 {
		z.hX1 = z.hIntegral(1.5) - 1
		z.hN = z.hIntegral(float64(n) + 0.5)
		z.thr = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	}
	return z, nil
}

// N returns the number of ranks.
func (z *Zipf) N() int { return z.n }

// Sample draws a rank in [0, n).
func (z *Zipf) Sample(r *rand.Rand) int {
	if z.s == 0 || z.n == 1 {
		return r.IntN(z.n)
	}
	n := float64(z.n)
	for {
		u := z.hN + r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > n {
			k = n
		}
		if k-x <= z.thr || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int(k) - 1
		}
	}
}

// h(x) = x^-s.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is H(x), an antiderivative of h: (x^(1−s) − 1)/(1 − s), or log x at s = 1.
func (z *Zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return helper2((1-z.s)*lx) * lx
}

func (z *Zipf) hIntegralInverse(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1 // numerical guard: the true value is never below −1
	}
	return math.Exp(helper1(t) * x)
}

// helper1(x) = log1p(x)/x, continuous at 0.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// helper2(x) = expm1(x)/x, continuous at 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}

// ZipfTable is a Zipf distribution over a small number of ranks as a CDF
// table, so that a given uniform u ∈ [0, 1) maps to a rank deterministically
// (Quantile). It assigns members to boards from a hash of the member.
type ZipfTable struct {
	cdf []float64
}

// NewZipfTable builds the table for n ≥ 1 ranks and exponent s ≥ 0.
func NewZipfTable(n int, s float64) (*ZipfTable, error) {
	if n < 1 {
		return nil, fmt.Errorf("zipf table: n must be ≥ 1, got %d", n)
	}
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("zipf table: exponent must be ≥ 0, got %g", s)
	}
	cdf := make([]float64, n)
	var sum float64
	for k := range n {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	return &ZipfTable{cdf: cdf}, nil
}

// N returns the number of ranks.
func (t *ZipfTable) N() int { return len(t.cdf) }

// P returns the probability of rank k.
func (t *ZipfTable) P(k int) float64 {
	if k == 0 {
		return t.cdf[0]
	}
	return t.cdf[k] - t.cdf[k-1]
}

// Quantile maps u ∈ [0, 1) to the rank whose CDF interval holds it.
func (t *ZipfTable) Quantile(u float64) int {
	k := sort.SearchFloat64s(t.cdf, u)
	if k < len(t.cdf) && t.cdf[k] == u {
		k++ // the interval of rank k is [cdf[k-1], cdf[k])
	}
	return min(k, len(t.cdf)-1)
}

// Sample draws a rank in [0, n).
func (t *ZipfTable) Sample(r *rand.Rand) int { return t.Quantile(r.Float64()) }

// Harmonic returns Σ_{k=1..n} k^-s, the normaliser of a Zipf over n ranks.
func Harmonic(n int, s float64) float64 {
	if s == 0 {
		return float64(n)
	}
	var h float64
	for k := n; k >= 1; k-- { // small terms first
		h += math.Pow(float64(k), -s)
	}
	return h
}

// Mix64 is a fixed 64-bit mixer (SplitMix64's finaliser): member → board
// assignment and prefill points must not depend on a run's seed, so that
// prefill, later runs and the planner agree.
func Mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// UnitHash maps (x, salt) to a uniform float in [0, 1).
func UnitHash(x, salt uint64) float64 {
	return float64(Mix64(x^salt*0x9e3779b97f4a7c15)>>11) / (1 << 53)
}
